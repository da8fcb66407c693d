"""Paths the program hands to a file system (a chart archive, the Kubeflow checkout, a file on a host).

A path is a C string to the kernel: a 0 byte cannot be in it (Python refuses it with ``ValueError: embedded null
byte``), a component longer than ``NAME_MAX`` or a whole path longer than ``PATH_MAX`` fails with
``ENAMETOOLONG`` ("File name too long"). Sources: Linux ``include/uapi/linux/limits.h`` (``NAME_MAX 255``,
``PATH_MAX 4096``, both in bytes, the final 0 counted in PATH_MAX) and POSIX.1-2017 ``<limits.h>``. The build
machines and the hosts the program prepares run Linux.
"""

from __future__ import annotations

from typing import Final

NAME_MAX: Final = 255
PATH_MAX: Final = 4096


def file_path_problem(path: str) -> str | None:
    """Why ``path`` cannot name a file on Linux (a 0 byte, a component or the whole too long), or None."""
    if "\x00" in path:
        return "holds a 0 byte, which no file name can (a path is a C string)"
    encoded = path.encode("utf-8", "surrogateescape")
    if len(encoded) >= PATH_MAX:
        return f"is {len(encoded)} bytes long; a Linux path is shorter than PATH_MAX ({PATH_MAX} bytes)"
    longest = max((len(part) for part in encoded.split(b"/")), default=0)
    if longest > NAME_MAX:
        return (
            f"has a component of {longest} bytes; a Linux file name is at most NAME_MAX ({NAME_MAX} bytes), "
            "or the file system answers 'File name too long'"
        )
    return None
