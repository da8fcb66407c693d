"""``python -m tools.mig plan --format yaml`` prints YAML and nothing else, whatever the solver prints."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import highspy
import pytest
import yaml

from tools.mig import main

_LIBC = ctypes.CDLL(None)


def test_the_yaml_output_stays_pasteable_when_the_native_solver_prints(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Stand-in for HiGHS printing from C although log_to_console is off (ERGO-Code/HiGHS issue #2734).
    real: Callable[..., Any] = highspy.Highs.run

    def chatty_run(*args: Any, **kwargs: Any) -> Any:
        _LIBC.printf(b"Running HiGHS 1.12.0: Copyright (c) 2025 HiGHS under MIT licence terms\n")
        _LIBC.fflush(None)
        return real(*args, **kwargs)

    monkeypatch.setattr(highspy.Highs, "run", chatty_run)
    code = main(["plan", "--model", "H100-80GB", "--gpus", "16", "--format", "yaml", "1g.10gb=40", "3g.40gb=12"])
    out, err = capfd.readouterr()
    assert code == 0
    documents = list(yaml.safe_load_all(out))
    assert documents[0] == {
        "gpu-platform:mig": {"demand": [{"gpuModel": "H100-80GB", "profiles": {"1g.10gb": 40, "3g.40gb": 12}}]}
    }
    assert all(set(document) == {"mig"} for document in documents[1:])
    assert "HiGHS" not in out.replace("proven optimal by HiGHS (highspy)", "")
    assert "Running HiGHS" in err
