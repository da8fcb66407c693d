"""``python -m components.kubeflow.hash_password``: the hash dex will check the login against."""

from __future__ import annotations

import io
import subprocess
import sys

import bcrypt
import pytest

from components.kubeflow import hash_password as tool
from tests.kubeflow.kustomize import REPO_ROOT


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run(stdin_text: str, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = tool.main(list(args), stdin=io.StringIO(stdin_text), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_piped_password_prints_only_a_hash_dex_accepts() -> None:
    code, out, err = _run("correct horse battery\n", "--cost", "10")
    assert code == 0 and err == ""
    hashed = out.strip()
    assert out.count("\n") == 1
    assert hashed.startswith("$2b$10$")
    assert bcrypt.checkpw(b"correct horse battery", hashed.encode())
    assert not bcrypt.checkpw(b"correct horse battery\n", hashed.encode())


def test_default_cost_is_upstreams_twelve() -> None:
    assert tool.hash_password("s3cret-Kubeflow").startswith("$2b$12$")


def test_module_runs_as_a_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "components.kubeflow.hash_password", "--cost", "10"],
        input="from-a-pipe",
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert bcrypt.checkpw(b"from-a-pipe", result.stdout.strip().encode())


@pytest.mark.parametrize(
    ("stdin_text", "reason"),
    [
        ("", "the password is empty"),
        ("\n", "the password is empty"),
        ("12341234\n", "published default password"),
        ("x" * 73, "longer than 72 bytes"),
        ("first\nsecond\n", "exactly one line"),
    ],
)
def test_refused_passwords_print_no_hash(stdin_text: str, reason: str) -> None:
    code, out, err = _run(stdin_text)
    assert code == tool.EXIT_REFUSED
    assert out == ""
    assert reason in err


def test_terminal_input_is_read_without_echo_and_confirmed(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = iter(["tty-password", "tty-password"])
    prompts: list[str] = []

    def fake_getpass(prompt: str, stream: object = None) -> str:
        prompts.append(prompt)
        return next(answers)

    monkeypatch.setattr(tool.getpass, "getpass", fake_getpass)
    out, err = io.StringIO(), io.StringIO()
    assert tool.main(["--cost", "10"], stdin=_Tty(), stdout=out, stderr=err) == 0
    assert len(prompts) == 2
    assert bcrypt.checkpw(b"tty-password", out.getvalue().strip().encode())


def test_terminal_passwords_that_differ_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = iter(["one-password", "another-one"])
    monkeypatch.setattr(tool.getpass, "getpass", lambda prompt, stream=None: next(answers))
    out, err = io.StringIO(), io.StringIO()
    assert tool.main([], stdin=_Tty(), stdout=out, stderr=err) == tool.EXIT_REFUSED
    assert out.getvalue() == "" and "differ" in err.getvalue()


@pytest.mark.parametrize("cost", ["9", "17"])
def test_costs_dex_would_reject_are_refused(cost: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        _run("fine-password", "--cost", cost)
    assert exit_info.value.code == 2
    with pytest.raises(ValueError, match=r"outside 10\.\.16"):
        tool.hash_password("fine-password", int(cost))
