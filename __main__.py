"""gpu-platform: load the typed stack config, build the platform, export the outputs contract."""

from components.config import load_stack_config
from components.outputs import export_outputs
from components.platform import build_platform

export_outputs(build_platform(load_stack_config()))
