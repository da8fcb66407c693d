"""Prometheus durations and rule numbers, by the parser Prometheus loads a rule file with.

A rule's ``for`` is a ``model.Duration``: Prometheus reads it with ``model.ParseDuration``
(github.com/prometheus/common v0.62.0 ``model/time.go``; https://github.com/prometheus/common/blob/v0.62.0/model/time.go):
``0`` alone, or units in the order ``y w d h m s ms``, each at most once, with a year of 365 days, and a total
that fits Go's ``time.Duration`` (an int64 of nanoseconds, about 292 years: "duration out of range" past it,
and a rule file that does not load). The same pattern is the ``for`` field's of the Prometheus Operator's
PrometheusRule CRD (``monitoring.coreos.com/v1`` ``Duration``).

A threshold is written into the alert's PromQL comparison (``... > <threshold>``). PromQL reads ``NaN`` and
``Inf`` as numbers (https://prometheus.io/docs/prometheus/latest/querying/basics/#float-literals-and-time-durations),
so the rule loads, but a comparison with NaN is never true and ``> Inf`` never holds: an alert that can never
fire. Such a threshold is refused.
"""

from __future__ import annotations

import math
import re
from typing import Final

#: ``durationRE`` of model/time.go.
_DURATION = re.compile(
    r"(?:([0-9]+)y)?(?:([0-9]+)w)?(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?(?:([0-9]+)ms)?\Z"
)
#: Milliseconds per unit, in the order of the pattern (model/time.go ``ParseDuration``: ``m(2, 1000*60*60*24*365)``...).
_UNIT_MS: Final = (365 * 86_400_000, 7 * 86_400_000, 86_400_000, 3_600_000, 60_000, 1000, 1)
#: The longest ``time.Duration`` in milliseconds (``1<<63 - 1`` nanoseconds; model/time.go refuses more).
DURATION_MAX_MS: Final = (2**63 - 1) // 10**6
SOURCE: Final = "Prometheus model.ParseDuration"


def duration_ms(value: str) -> int | None:
    """``value`` in milliseconds as ``model.ParseDuration`` reads it; None where it refuses it (overflow included)."""
    if value == "0":
        return 0
    match = _DURATION.match(value) if value else None
    if match is None:
        return None
    total = sum(int(count) * unit for count, unit in zip(match.groups(), _UNIT_MS, strict=True) if count)
    return total if total <= DURATION_MAX_MS else None


def duration_problem(value: str) -> str | None:
    """Why ``value`` is not a Prometheus duration a rule file loads, or None."""
    if duration_ms(value) is not None:
        return None
    if value and _DURATION.match(value):
        return f"{value!r} is longer than Prometheus' longest duration, about 292 years (106751d) ({SOURCE})"
    return (
        f"{value[:80]!r} is not a Prometheus duration: 0, or units in the order y w d h m s ms, each at most once, "
        f"like 30s, 5m or 1h30m ({SOURCE})"
    )


def threshold_problem(value: float) -> str | None:
    """Why ``value`` cannot be an alert threshold (NaN and the infinities never compare true), or None."""
    if math.isfinite(value):
        return None
    return (
        f"{value} is not a finite number: an alert comparing with NaN or an infinity can never fire "
        "(PromQL float literals); write a number"
    )
