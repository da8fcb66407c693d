"""The garbage collector's pace for a program run: young collections as CPython does them, full ones rarely.

Why: registering a fleet builds objects that live until the run ends (resources, their outputs and
futures, the SDK's dependency sets). CPython's default pace runs a full collection whenever the
long-lived objects grew by a quarter, and each one walks every object the process holds, the
imported SDK's tens of thousands of generated classes included (CPython 3.11 ``Modules/gcmodule.c``,
``collect_generations``: a full collection once the middle generation was collected ``threshold2`` times
and the objects awaiting their first full collection exceed a quarter of the long-lived ones; the pace is
``gc.set_threshold``, https://docs.python.org/3.11/library/gc.html). Measured under the preview's mocks
(``benchmarks/bench_scale.py``): at 150 nodes the collector took 6.7 of 15.8 CPU-s, 4.8 of them in 9
full collections; at 1,000 nodes 43 of 107 CPU-s, 32 of them in 20 full collections of 1.6 s each.
Those full collections found almost nothing: the program's garbage is acyclic (freed by reference
counting) or dies young (found by the young collections, which this keeps as they are).

With a full collection only after :data:`MIDDLE_COLLECTIONS_PER_FULL` collections of the middle
generation, the 150-node run took 10.8 CPU-s and the 1,000-node run 74 CPU-s, at the same peak memory
(930 MB). The same SDK code runs under ``pulumi preview`` and ``pulumi up``, so ``__main__.py`` sets
the pace there too. A library cannot set it for its caller: it is one setting of the process.
"""

from __future__ import annotations

import gc

#: Collections of the middle generation between two full collections (CPython's default: 10).
MIDDLE_COLLECTIONS_PER_FULL = 1000


def collect_fully_rarely() -> None:
    """Keep the young generations' thresholds; a full collection only every ``MIDDLE_COLLECTIONS_PER_FULL`` middle ones."""
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, MIDDLE_COLLECTIONS_PER_FULL)
