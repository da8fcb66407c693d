"""gpu-platform: load the typed stack config, plan it once, build the platform, export the outputs contract."""

from components.stack.garbage_collection import collect_fully_rarely
from components.stack.load import load_stack_config, read_recorded_mig_plan, read_secrets
from components.stack.outputs import export_outputs
from components.stack.plan import plan_stack
from components.stack.program import build_platform

collect_fully_rarely()
config = load_stack_config()
export_outputs(build_platform(plan_stack(config, read_recorded_mig_plan()), read_secrets(config)))
