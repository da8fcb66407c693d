"""How property tests draw their examples: deterministic in ``make test`` and CI, random in ``make fuzz``.

A property that fails only on some seeds makes main flap and hides a real finding behind a re-run. So
the default profile (``ci``) derandomizes: each test's examples are a function of the test itself, the
same on every machine, and no example database replays old failures. ``make fuzz`` selects the ``fuzz``
profile (``HYPOTHESIS_PROFILE=fuzz``): random examples, ``FUZZ_FACTOR`` times as many, and a
``--hypothesis-seed`` replays a run; a failure there is a real finding, fixed in the code or the
property, never by pinning a seed.
"""

from __future__ import annotations

import os

from hypothesis import settings

PROFILE_VARIABLE = "HYPOTHESIS_PROFILE"
FUZZ_FACTOR = 20  #: how many times more examples ``make fuzz`` draws than ``make test``

settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True)
settings.register_profile("fuzz", derandomize=False, database=None, deadline=None, print_blob=True)
PROFILE = os.environ.get(PROFILE_VARIABLE, "ci")
if PROFILE not in ("ci", "fuzz"):
    raise ValueError(f"{PROFILE_VARIABLE}={PROFILE!r}: allowed: 'ci' (make test), 'fuzz' (make fuzz)")
settings.load_profile(PROFILE)


def examples(count: int) -> int:
    """``count`` examples in ``make test``, ``FUZZ_FACTOR`` times as many in ``make fuzz``."""
    return count * FUZZ_FACTOR if PROFILE == "fuzz" else count
