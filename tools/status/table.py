"""The status for a person: one line per node, grouped by pool, in columns that fit the width.

A small formatter of our own: no table library is a runtime dependency of the project (``rich`` is in the
virtualenv only as import-linter's), and what is needed is small: columns sized to their content with a cap, a
budget that shrinks the widest columns first so no line is longer than the width, a ``…`` where a cell is cut,
and colour (ANSI) only when asked for (``__main__``: stdout is a terminal and ``NO_COLOR`` is unset). The width of
a line is counted before any colour is added.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from tools.status.declared import Declaration, PoolDeclaration
from tools.status.document import counts, ordered
from tools.status.live import LiveCluster
from tools.status.verdict import NodeStatus, Verdict

GAP: Final = "  "
ELLIPSIS: Final = "…"
#: The narrowest the table gets (every column at its least: an 80-column terminal); a narrower one wraps the lines.
MIN_WIDTH: Final = 80
#: The width when stdout is not a terminal (a file, a pipe, CI logs).
DEFAULT_WIDTH: Final = 160
#: Marks a value that differs from the declaration (the pool's line above it says what is declared).
DIFFERS: Final = "≠"
#: Starts the line under a node that says why it is not conformant.
BECAUSE: Final = "↳ "


@dataclass(frozen=True)
class Column:
    title: str
    cap: int  #: never wider than this
    least: int  #: shrunk no narrower than this when the line is too long


COLUMNS: Final = (
    Column("POOL", 20, 4),
    Column("NODE", 48, 16),
    Column("VERDICT", 14, 14),
    Column("DRIVER", 28, 9),
    Column("MIG", 34, 9),
    Column("MAINTENANCE", 40, 11),
    Column("PROOF", 12, 5),
)

_COLOURS: Final = {
    Verdict.CONFORMANT: "32",  # green
    Verdict.IN_MAINTENANCE: "33",  # yellow
    Verdict.UNKNOWN: "35",  # magenta
    Verdict.DRIFT: "1;31",  # bold red
    Verdict.FAILED: "1;37;41",  # bold white on red
}


def cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, ``…`` marking a cut."""
    if len(text) <= width:
        return text
    return text[: max(0, width - 1)] + ELLIPSIS if width > 0 else ""


def age(seconds: float | None) -> str:
    """``45s``, ``12m``, ``3h``, ``2d``."""
    if seconds is None:
        return ""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def image_version(image: str) -> str:
    """The driver version an image's tag names: ``…/driver:580.95.05-ubuntu22.04`` -> ``580.95.05``."""
    tail = image.rsplit("/", 1)[-1]
    if "@" in tail:
        return tail.split("@", 1)[1][:15]
    return tail.split(":", 1)[-1].split("-", 1)[0] if ":" in tail else "untagged"


def _differs(status: NodeStatus, *fields: str) -> str:
    found = any(f.field in fields and f.verdict in (Verdict.DRIFT, Verdict.FAILED) for f in status.findings)
    return DIFFERS if found else ""


def _driver(status: NodeStatus) -> str:
    """What GPU Feature Discovery reports, and the operator's driver pod where it says something else."""
    parts = [status.driver_running or "-"]
    if status.driver_pods > 1:
        parts.append(f"{status.driver_pods} pods")
    elif status.driver_pods == 1 and status.driver_image:
        version = image_version(status.driver_image)
        if version != status.driver_running or status.driver_owner != "operator":
            parts.append(f"pod {version}")
    elif status.driver_owner == "operator":
        parts.append("no pod")
    return _differs(status, "driver") + " ".join(parts)


def _maintenance(status: NodeStatus) -> str:
    """The node agent's state (and reason), the operator's upgrade state, the cordon: whatever is there."""
    parts = []
    if status.maintenance_state not in (None, "idle", "done"):
        reason = f"/{status.maintenance_reason}" if status.maintenance_reason else ""
        parts.append(f"{status.maintenance_state}{reason}")
    if status.upgrade_state not in (None, "upgrade-done"):
        parts.append(str(status.upgrade_state))
    if status.cordoned:
        parts.append("cordoned")
    return ", ".join(parts) or "-"


def cells(status: NodeStatus, now: datetime) -> list[str]:
    """The node's cells, in the order of ``COLUMNS``."""
    if not status.present:
        return [status.pool or "-", status.name, str(status.verdict), "-", "-", "-", "-"]
    mig = _differs(status, "mig", "gpus") + (status.mig_applied or "-")
    if status.mig_state:
        mig = f"{mig} {status.mig_state}"
    return [
        status.pool or "(none)",
        status.name,
        str(status.verdict),
        _driver(status),
        mig,
        _maintenance(status),
        f"{status.proof.result} {age(status.proof.age(now))}".strip(),
    ]


def widths(rows: list[list[str]], width: int) -> list[int]:
    """Each column's width: its content's, capped; too long a line shrinks the widest columns first, the node's
    and the pool's names last (a person copies them into kubectl)."""
    sizes = [
        min(column.cap, max([len(column.title), *(len(row[index]) for row in rows)]))
        for index, column in enumerate(COLUMNS)
    ]
    budget = width - len(GAP) * (len(COLUMNS) - 1)
    for names_too in (False, True):
        while sum(sizes) > budget:
            spare = [
                (size - column.least, index)
                for index, (size, column) in enumerate(zip(sizes, COLUMNS, strict=True))
                if names_too or column.title not in ("NODE", "POOL")
            ]
            room, index = max(spare)
            if room <= 0:
                break
            sizes[index] -= 1
    return sizes


def _line(values: list[str], sizes: list[int], paint: Callable[[int, str], str]) -> str:
    parts = [
        paint(index, cut(value, size).ljust(size))
        for index, (value, size) in enumerate(zip(values, sizes, strict=True))
    ]
    return GAP.join(parts).rstrip()


def _because(status: NodeStatus, indent: int, width: int, verbose: bool) -> list[str]:
    """The line(s) under a node that is not conformant: its deciding reason (all of them with ``verbose``)."""
    reasons = status.reasons
    if not reasons:
        return []
    lead, follow = " " * indent + BECAUSE, " " * (indent + len(BECAUSE))
    if not verbose:
        more = f" (+{len(reasons) - 1} more)" if len(reasons) > 1 else ""
        first = reasons[0].text()
        room = width - len(lead) - len(more)
        return [f"{lead}{cut(first, room)}{more}"]
    lines: list[str] = []
    for finding in reasons:
        lines.extend(
            textwrap.wrap(
                finding.text(), width=width, initial_indent=lead, subsequent_indent=follow, break_on_hyphens=False
            )
        )
    return lines


def _pool_header(pool: str | None, members: list[NodeStatus], declared: list[PoolDeclaration]) -> str:
    """``a100 (nodeGroups.a100): 6 nodes, 1 conformant, 2 drift; declared driver 595.91.07 (gpu-platform-a100),
    MIG all-1g.10gb``: the pool's counts, and what its nodes are compared with (the driver's NVIDIADriver, or who
    installs it)."""
    tally = ", ".join(f"{count} {verdict}" for verdict, count in counts(members).items() if count)
    nodes = f"{len(members)} node{'s' if len(members) != 1 else ''}, {tally}"
    if pool is None:
        return f"GPU nodes of no declared pool: {nodes}"
    mine = [p for p in declared if p.pool == pool]
    paths = sorted({p.config_path.split("[", 1)[0] for p in mine})
    drivers = sorted(
        {
            f"{p.driver.version} ({p.driver.resource or ('hosts' if p.driver.owner == 'host' else 'operator')})"
            for p in mine
            if p.driver
        }
    )
    migs = sorted({p.mig_config for p in mine if p.mig_config})
    driver_text = f"driver {', '.join(drivers)}" if drivers else "no driver"
    mig_text = f"MIG {', '.join(migs)}" if migs else "no MIG"
    return f"{pool} ({', '.join(paths)}): {nodes}; declared {driver_text}, {mig_text}"


def render(
    declaration: Declaration,
    live: LiveCluster,
    statuses: list[NodeStatus],
    other_nodes: int,
    now: datetime,
    width: int = DEFAULT_WIDTH,
    colour: bool = False,
    verbose: bool = False,
    problems_only: bool = False,
) -> list[str]:
    """The report's lines, none longer than ``width`` (at least ``MIN_WIDTH``) once colour codes are left out."""
    width = max(MIN_WIDTH, width)
    nodes = ordered(statuses)

    def bold(text: str) -> str:
        return f"\x1b[1m{text}\x1b[0m" if colour else text

    def paint(index: int, text: str) -> str:
        verdict = text.strip()
        if colour and index == 2 and verdict in _COLOURS:
            return f"\x1b[{_COLOURS[Verdict(verdict)]}m{text}\x1b[0m"
        return text

    def prose(text: str, emphasis: bool = False) -> list[str]:
        """A line of text (not a row): wrapped at the width, never cut, the rest indented."""
        wrapped = textwrap.wrap(text, width=width, subsequent_indent="  ", break_on_hyphens=False) or [""]
        return [bold(line) if emphasis else line for line in wrapped]

    tally = counts(nodes)
    summary = ", ".join(f"{count} {verdict}" for verdict, count in tally.items() if count) or "none"
    others = f"; {other_nodes} other node{'s' if other_nodes != 1 else ''} (no GPU, no pool) not shown"
    lines = [
        *prose(
            f"Stack {declaration.stack}: cluster {declaration.cluster} ({declaration.kind}) at {live.server}, "
            f"Kubernetes {live.version or 'unknown'}, {now.strftime('%Y-%m-%d %H:%M UTC')}",
            emphasis=True,
        ),
        *prose(f"{len(nodes)} GPU nodes: {summary}" + (others if other_nodes else "")),
    ]
    shown = [s for s in nodes if not (problems_only and s.verdict == Verdict.CONFORMANT)]
    if problems_only and len(shown) < len(nodes):
        lines.extend(prose(f"{len(nodes) - len(shown)} conformant nodes not shown (--problems)"))
    rows = {id(status): cells(status, now) for status in shown}
    sizes = widths(list(rows.values()), width)
    titles = [column.title for column in COLUMNS]
    indent = sizes[0] + len(GAP)  # the reasons start under the node's name
    for pool, members in _groups(nodes):
        visible = [s for s in members if id(s) in rows]
        lines.append("")
        lines.extend(prose(_pool_header(pool, members, list(declaration.pools)), emphasis=True))
        if not visible:
            continue
        lines.append(_line(titles, sizes, lambda _index, text: text))
        for status in visible:
            lines.append(_line(rows[id(status)], sizes, paint))
            lines.extend(_because(status, indent, width, verbose))
    if not verbose and any(len(s.findings) > 1 for s in nodes):
        lines.append("")
        lines.extend(prose("Every reason of each node: --verbose. For other teams: --json (docs/status.schema.json)."))
    return lines


def _groups(nodes: Iterable[NodeStatus]) -> list[tuple[str | None, list[NodeStatus]]]:
    groups: dict[str | None, list[NodeStatus]] = {}
    for status in nodes:
        groups.setdefault(status.pool, []).append(status)
    return list(groups.items())
