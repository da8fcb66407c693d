"""The config model of one alert's override (``observability.alerts.<Alert>``).

Its own module because both the observability config (which holds the overrides) and the alert
planning (which applies them) need it, and the config also reads the alert names from the planning.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from components.base.config_model import ConfigModel

Severity = Literal["critical", "warning", "info"]


class AlertOverride(ConfigModel):
    """One alert's settings; unset keys keep the alert's default."""

    enabled: bool | None = None
    for_: str | None = Field(
        default=None,
        alias="for",
        description="how long the condition must hold: a Prometheus duration (0, or units y w d h m s ms in that order; "
        "at most about 292 years)",
    )
    severity: Severity | None = None
    threshold: float | None = Field(
        default=None, description="the alert's own threshold, a finite number (see docs/runbooks.md)"
    )
