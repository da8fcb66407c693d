"""YAML text in and out through LibYAML, the C parser and emitter PyYAML's wheels ship.

Why: the pure-Python SafeLoader and SafeDumper cost seconds on the texts a fleet-sized stack makes (the
spawner config with an affinity option per pool, the mig-parted config, the stack file's values); the
C classes read and write the same YAML many times faster. Same safe subset, same output options.
"""

from __future__ import annotations

from typing import Any

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def load(text: str) -> Any:
    """``yaml.safe_load`` through LibYAML."""
    return yaml.load(text, Loader=_LOADER)


def dump(value: Any, **options: Any) -> str:
    """``yaml.safe_dump`` through LibYAML (``sort_keys``, ``default_flow_style``, ``width``... as given)."""
    return yaml.dump(value, Dumper=_DUMPER, **options)
