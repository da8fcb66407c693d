"""Version strings as comparable tuples.

Driver versions ("580.95.05", "570.26") and CUDA levels ("12.6", "13.0.2") are compared as
tuples of integers, never as strings: "580.9" < "580.10" must hold, and it does not for strings.
"""

from __future__ import annotations

import re

_VERSION = re.compile(r"^\d+(\.\d+)*$")


def parse_version(text: str) -> tuple[int, ...]:
    """Parse "580.95.05" into (580, 95, 5); raise ValueError for anything that is not dotted digits."""
    cleaned = text.strip().lstrip("vV")
    if not _VERSION.match(cleaned):
        raise ValueError(f"{text!r} is not a dotted version number (for example 580.95.05)")
    return tuple(int(part) for part in cleaned.split("."))


def is_version(text: str) -> bool:
    """True when ``text`` parses as a dotted version number."""
    try:
        parse_version(text)
    except ValueError:
        return False
    return True


def driver_branch(driver_version: str) -> int:
    """The driver branch of a driver version: "580.95.05" is on branch R580."""
    return parse_version(driver_version)[0]


_FULL_DRIVER = re.compile(r"\d{3}\.\d+(\.\d+)?\Z")


def full_driver_version_problem(text: str) -> str | None:
    """Why ``text`` is not a full NVIDIA driver version (``580.95.05``, ``570.172``), or None.

    A bare branch (``580``) names no driver the GPU Operator can install: its driver image tags are
    full versions (nvcr.io/nvidia/driver:<version>-<os>).
    """
    if not _FULL_DRIVER.match(text):
        return f"{text!r} is not a full driver version such as 580.95.05 (a branch like 580 names no driver)"
    return None
