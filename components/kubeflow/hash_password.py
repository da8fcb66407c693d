"""Make the bcrypt hash of the Kubeflow (dex) user's password for ``pulumi config set --secret``.

Usage::

    python -m components.kubeflow.hash_password | pulumi config set --secret <the dex password hash key>
    printf '%s' "$PASSWORD" | python -m components.kubeflow.hash_password

Why a tool: upstream documents a passlib one-liner, and the overlay deletes upstream's
``dex-passwords`` Secret (its hash is of the public password ``12341234``), so the program needs a
hash from somewhere. On a terminal the password is read without echo (getpass) and asked twice;
otherwise it is one line from stdin. It refuses an empty password, upstream's default and anything
bcrypt would silently truncate (over 72 bytes). Only the hash goes to stdout, so it can be piped.

dex checks the hash with Go's bcrypt, which accepts ``$2a$``, ``$2b$`` and ``$2y$``; this prints
``$2b$`` at cost 12 (upstream's cost) by default. dex refuses costs below 10 and above 16.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import TextIO

import bcrypt

from components.catalog.kubeflow.v1_10_2.credentials import DEFAULT_PASSWORD

MIN_COST = 10
MAX_COST = 16
DEFAULT_COST = 12
MAX_PASSWORD_BYTES = 72
EXIT_REFUSED = 2


class PasswordRefusedError(ValueError):
    """A password that must not become the Kubeflow login."""


def check_password(password: str) -> None:
    """Raise PasswordRefusedError (with the reason) for a password that must not be used."""
    if not password:
        raise PasswordRefusedError("the password is empty")
    if password == DEFAULT_PASSWORD:
        raise PasswordRefusedError("that is upstream's published default password; choose another")
    if len(password.encode("utf-8")) > MAX_PASSWORD_BYTES:
        raise PasswordRefusedError(
            f"the password is longer than {MAX_PASSWORD_BYTES} bytes; bcrypt ignores everything after that"
        )


def hash_password(password: str, cost: int = DEFAULT_COST) -> str:
    """The bcrypt hash dex accepts for ``password`` (checked first, see check_password)."""
    if not MIN_COST <= cost <= MAX_COST:
        raise ValueError(f"bcrypt cost {cost} is outside {MIN_COST}..{MAX_COST}, the range dex accepts")
    check_password(password)
    return bcrypt.hashpw(password.encode("utf-8"), bcrypt.gensalt(rounds=cost)).decode("ascii")


def _read_password(stdin: TextIO, stderr: TextIO) -> str:
    if stdin.isatty():
        first = getpass.getpass("Kubeflow user password: ", stream=stderr)
        second = getpass.getpass("Repeat the password: ", stream=stderr)
        if first != second:
            raise PasswordRefusedError("the two passwords differ")
        return first
    text = stdin.read()
    if text.endswith("\n"):
        text = text[:-1]
    if text.endswith("\r"):
        text = text[:-1]
    if "\n" in text or "\r" in text:
        raise PasswordRefusedError("stdin must hold exactly one line: the password")
    return text


def main(
    argv: list[str] | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Read the password, print its hash; exit 2 with the reason when the password is refused."""
    stdin = stdin if stdin is not None else sys.stdin
    stdout = stdout if stdout is not None else sys.stdout
    stderr = stderr if stderr is not None else sys.stderr
    parser = argparse.ArgumentParser(
        prog="python -m components.kubeflow.hash_password",
        description="Print the bcrypt hash of the Kubeflow (dex) user's password, read from stdin.",
    )
    parser.add_argument(
        "--cost",
        type=int,
        default=DEFAULT_COST,
        choices=range(MIN_COST, MAX_COST + 1),
        metavar=f"{{{MIN_COST}..{MAX_COST}}}",
        help=f"bcrypt cost (default {DEFAULT_COST}, as upstream)",
    )
    args = parser.parse_args(argv)
    try:
        password = _read_password(stdin, stderr)
        hashed = hash_password(password, args.cost)
    except PasswordRefusedError as error:
        print(f"hash_password: refused: {error}", file=stderr)
        return EXIT_REFUSED
    print(hashed, file=stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
