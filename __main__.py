"""gpu-platform: load the typed stack config, build the platform, export the outputs contract."""

from components.stack.config import load_stack_config
from components.stack.outputs import export_outputs
from components.stack.program import build_platform

export_outputs(build_platform(load_stack_config()))
