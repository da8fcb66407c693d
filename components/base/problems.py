"""What is wrong with a stack config: a problem names its key path; the error lists every problem.

Pure data (the planning functions of every capability return problems), plus the one exception
the program raises for an invalid stack before any resource is registered.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pulumi


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong with the config: where (a dotted key path) and what."""

    path: str
    message: str

    def __str__(self) -> str:
        """One line, whatever the config held: control characters in the path or message are escaped."""
        return f"{_one_line(self.path)}: {_one_line(self.message)}"


class StackConfigError(pulumi.RunError):
    """The stack config is invalid; ``problems`` says where and why, nothing has been created.

    A ``RunError`` makes the Pulumi engine print the message alone, without a traceback.
    """

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = sorted(set(problems))
        lines = "\n".join(f"  {problem}" for problem in self.problems)
        count = len(self.problems)
        super().__init__(f"invalid stack config ({count} problem{'s' if count != 1 else ''}):\n{lines}")


def join_path(*parts: object) -> str:
    """Join key path parts: ("nodeGroups", "v100", 0) -> "nodeGroups.v100[0]".

    A key that is empty, has surrounding blanks or control characters is shown quoted (``'\\n'``), so a
    path always reads as one line and names the key the user really wrote.
    """
    path = ""
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
            continue
        shown = shown_key(str(part))
        path = f"{path}.{shown}" if path else shown
    return path


def shown_key(text: str) -> str:
    """How a key path shows a key: as written, or quoted when empty, blank-padded or holding control characters."""
    return text if text and text.isprintable() and text.strip() == text else repr(text)


def _one_line(text: str) -> str:
    return text if "\n" not in text and "\r" not in text else text.replace("\r", "\\r").replace("\n", "\\n")
