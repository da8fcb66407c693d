"""Whether the program runs under the offline preview, and notices for the person running it.

Some checks need the local machine (is the kubeflow/manifests checkout there, at the right tag?).
A real ``pulumi up`` fails on them; the offline preview, which a reviewer runs on any clone,
reports them as notices and goes on.
"""

from __future__ import annotations

import os

import pulumi

from components.catalog.names import OFFLINE_ENV

_NOTICES: list[str] = []


def is_offline() -> bool:
    """True under the offline preview (``python -m preview``)."""
    return os.environ.get(OFFLINE_ENV) == "1"


def notice(message: str) -> None:
    """Tell the person running the program something they should act on (not an error)."""
    _NOTICES.append(message)
    pulumi.log.info(message)


def warning(message: str) -> None:
    """Tell the person running the program that a legal but risky setting is in effect, and why."""
    _NOTICES.append(f"warning: {message}")
    pulumi.log.warn(message)


def drain_notices() -> list[str]:
    """The notices since the last call, oldest first."""
    notices = list(_NOTICES)
    _NOTICES.clear()
    return notices
