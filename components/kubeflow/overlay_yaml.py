"""The YAML style of the generated overlay's files: keys in the order written, multi-line strings as literal blocks.

Why its own module: the kustomizations (``overlay``) and the inline patches in them (``patches``) must
be written the same way, so the same spec always gives byte-identical files.
"""

from __future__ import annotations

import yaml


class _Dumper(yaml.SafeDumper):
    """SafeDumper that writes multi-line strings (inline patches) as literal blocks."""


def _str_representer(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str_representer)


def dump(data: object) -> str:
    """``data`` as the overlay writes YAML: block style, keys unsorted, no line wrapping."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=4096)
