"""The diff engine: what a change does to a stack, from two previews' files.

``diff_snapshots(base, head)`` compares two ``Snapshot`` s of one stack (``preview.diff.snapshot``) and
returns a ``StackDiff``: per resource created, updated (each changed input path, old -> new),
replaced (and the replace-triggering fields, ``preview.diff.replacements``) or deleted; every changed
stack output; per pool the MIG layout of each GPU before and after (which GPUs get re-partitioned)
and whether the node agent drains the nodes for it; the driver per pool; the policy findings that
appear or disappear. Everything is sorted and rendered to strings here, so the reports built from it
(console, Markdown, HTML, ``diff.json``) are byte-identical for the same two previews.

Secrets: the previews hold ``"[secret]"`` where a value is secret, so a changed secret shows as no
change (never as its value); the reports say so.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

import yaml

from components.catalog.names import NODE_GROUP_TYPE
from preview.diff.moves import Move, find_moves
from preview.diff.platform_switch import platform_switch_refusals
from preview.diff.replacements import ResourceOptions, replace_note, replace_reasons, update_note
from preview.diff.snapshot import Gpu, Pool, Snapshot
from preview.run.registration import SECRET_MASK

CREATE, UPDATE, REPLACE, DELETE = "create", "update", "replace", "delete"
ACTIONS = (CREATE, UPDATE, REPLACE, DELETE)
ABSENT = "(absent)"
MAX_VALUE = 160  # characters of one value shown in a report; longer ones are cut and say how long
MAX_TEXT_DIFF = 60  # lines of a multi-line text's unified diff
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


@dataclass(frozen=True)
class Change:
    """One changed value: its path (``spec.template.spec.containers[0].image``), old and new, as text."""

    path: str
    old: str
    new: str
    text_diff: tuple[str, ...] = ()  # a unified diff, when both are multi-line strings


@dataclass(frozen=True)
class ResourceChange:
    """What ``pulumi up`` does to one resource."""

    action: str
    type: str
    name: str
    parent: str | None
    changes: tuple[Change, ...] = ()
    reasons: tuple[str, ...] = ()  # replace: the replace-triggering fields
    note: str = ""
    urn: str = ""  # the engine's URN (a delete: the old one)
    body: str = ""  # create: every input it is created with, as YAML (secrets masked)
    moved_from: str = ""  # the old URN an alias pairs it with (an update, not a create and a delete)


#: Kinds whose pods are replaced when their ``spec.template`` changes (the controllers' rollout).
WORKLOAD_KINDS = ("Deployment", "DaemonSet", "StatefulSet", "ReplicaSet")


@dataclass(frozen=True)
class RenderedChange:
    """One rendered object created, changed (with the changed paths) or deleted, under its release or Directory."""

    origin: str
    action: str
    kind: str
    name: str  # ``<namespace>/<name>`` or ``<name>``
    changes: tuple[Change, ...] = ()

    @property
    def rolls(self) -> bool:
        """A workload whose pod template changes: its controller replaces every pod."""
        return (
            self.action == UPDATE
            and self.kind in WORKLOAD_KINDS
            and any(c.path.startswith("spec.template") for c in self.changes)
        )


@dataclass(frozen=True)
class GpuChange:
    """One GPU of a pool's node, before and after."""

    index: int
    before: str
    after: str

    @property
    def repartitioned(self) -> bool:
        """True when the GPU's MIG layout changes (mig-manager reconfigures it)."""
        return self.before != self.after


@dataclass(frozen=True)
class PoolChange:
    """A GPU pool (a bare-metal node, or a Yandex group's nodes) before and after."""

    name: str
    model: str
    nodes: int
    status: str  # "added", "removed", "changed" or "unchanged"
    mig_config_before: str
    mig_config_after: str
    gpus: tuple[GpuChange, ...]
    before: Pool | None
    after: Pool | None
    driver_before: str
    driver_after: str
    drain: str  # what happens to the nodes when GPUs are re-partitioned ("" when none are)
    drained_by_agent: bool
    nodes_replaced: str = ""  # a Yandex group whose cloud name changes: every node is new
    driver_rollout: str = ""  # the pool's driver object changes: its driver pods restart on every node

    @property
    def repartitioned(self) -> tuple[int, ...]:
        """Indices of the GPUs whose layout changes on nodes that stay (an added or removed pool has none)."""
        if self.before is None or self.after is None:
            return ()
        return tuple(g.index for g in self.gpus if g.repartitioned)


@dataclass(frozen=True)
class Finding:
    """One policy finding (a row of ``policy-report.json``)."""

    policy: str
    enforcement: str
    resource: str
    message: str
    origin: str


@dataclass(frozen=True)
class Verdict:
    """The policy gate's verdict on one preview."""

    mandatory: int
    advisory: int

    @property
    def passed(self) -> bool:
        """No mandatory violation."""
        return self.mandatory == 0

    def describe(self) -> str:
        """``passed: 0 mandatory, 57 advisory violation(s)``."""
        return f"{'passed' if self.passed else 'FAILED'}: {self.mandatory} mandatory, {self.advisory} advisory violation(s)"


@dataclass
class StackDiff:
    """Everything that changes in one stack between a base and a head preview."""

    stack: str
    base: str  # what the base is: "main (3f2c1ab)", "no preview: ..."
    head: str
    resources: list[ResourceChange] = field(default_factory=list)
    outputs: list[Change] = field(default_factory=list)
    pools: list[PoolChange] = field(default_factory=list)
    appeared: list[Finding] = field(default_factory=list)
    disappeared: list[Finding] = field(default_factory=list)
    verdict_before: Verdict | None = None
    verdict_after: Verdict = field(default_factory=lambda: Verdict(0, 0))
    resources_after: int = 0
    findings_after: list[Finding] = field(default_factory=list)  # every finding of the head, for the verdicts
    moves: list[Move] = field(default_factory=list)  # deleted and created resources that are one object, unaliased
    refused: list[str] = field(default_factory=list)  # the head is refused: every problem (nothing else is known)
    mig_plan: str = ""  # the MIG plan the change needs recorded, and how (empty: the recorded one is current)
    rendered: list[RenderedChange] = field(default_factory=list)  # objects inside releases and Directories
    #: A platform switch that deletes what the old platform created (``preview.diff.platform_switch``).
    platform_switch: list[str] = field(default_factory=list)

    @property
    def rollouts(self) -> list[RenderedChange]:
        """Rendered workloads whose pod template changes: their pods restart."""
        return [change for change in self.rendered if change.rolls]

    @property
    def mandatory_findings(self) -> list[str]:
        """What the review itself refuses (the gate exits 3): every unaliased move of one real object, and a platform
        switch that deletes what the old platform created."""
        return [*(f"same object, new URN, no alias: {move.describe()}" for move in self.moves), *self.platform_switch]

    def of(self, action: str) -> list[ResourceChange]:
        """The resource changes of one action, in registration order."""
        return [r for r in self.resources if r.action == action]

    def counts(self) -> dict[str, int]:
        """Action -> number of resources."""
        return {action: len(self.of(action)) for action in ACTIONS}

    @property
    def drained(self) -> list[PoolChange]:
        """Pools with re-partitioned GPUs whose nodes the node agent drains first."""
        return [p for p in self.pools if p.repartitioned and p.drained_by_agent]

    @property
    def repartitioned(self) -> list[PoolChange]:
        """Pools with at least one re-partitioned GPU."""
        return [p for p in self.pools if p.repartitioned]

    @property
    def driver_changes(self) -> list[PoolChange]:
        """Pools whose driver changes (a pool only in one preview is not a driver change)."""
        return [p for p in self.pools if p.before and p.after and p.driver_before != p.driver_after]

    @property
    def driver_rollouts(self) -> list[PoolChange]:
        """Pools whose driver object changes without a version change (driver pods restart there too)."""
        return [p for p in self.pools if p.driver_rollout]

    def driver_groups(self) -> list[tuple[tuple[str, ...], str, str]]:
        """Driver changes, pools with the same change together: ``((pool, ...), before, after)``."""
        groups: dict[tuple[str, str], list[str]] = {}
        for pool in self.driver_changes:
            groups.setdefault((pool.driver_before, pool.driver_after), []).append(pool.name)
        return [(tuple(names), before, after) for (before, after), names in sorted(groups.items())]

    @property
    def empty(self) -> bool:
        """Nothing changes at all."""
        return not (
            self.resources
            or self.outputs
            or self.repartitioned
            or self.appeared
            or self.disappeared
            or self.refused
            or self.rendered
        )

    def to_json(self) -> str:
        """``diff.json``: the whole diff, sorted keys, a final newline."""
        document = asdict(self)
        document["counts"] = self.counts()
        return json.dumps(document, indent=2, sort_keys=True) + "\n"


# ----------------------------------------------------------------------------------------------
# values


def _key(path: str, key: str) -> str:
    if _PLAIN_KEY.fullmatch(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"


def show(value: Any) -> str:
    """A value as one line of JSON, cut at ``MAX_VALUE`` characters (saying how long it was)."""
    if value is _MISSING:
        return ABSENT
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    if len(text) > MAX_VALUE:
        return f"{text[: MAX_VALUE - 20]}... ({len(text)} characters)"
    return text


_MISSING = object()


def _text_diff(old: str, new: str) -> tuple[str, ...]:
    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(), "before", "after", lineterm="", n=2))
    if len(lines) > MAX_TEXT_DIFF:
        lines = [*lines[:MAX_TEXT_DIFF], f"... ({len(lines) - MAX_TEXT_DIFF} more lines)"]
    return tuple(lines)


def value_changes(old: Any, new: Any, path: str = "") -> list[Change]:
    """Every leaf that differs between ``old`` and ``new`` (dicts by key, equal-length lists by index)."""
    if old == new:
        return []
    if SECRET_MASK in (old, new) and _MISSING not in (old, new):
        # A masked value cannot be compared: a secret that changes shows as no change (never as its value),
        # and so does a value one preview masks and the other shows (a base made by an older review).
        return []
    if isinstance(old, dict) and isinstance(new, dict):
        found: list[Change] = []
        for key in sorted(set(old) | set(new), key=str):
            found += value_changes(old.get(key, _MISSING), new.get(key, _MISSING), _key(path, str(key)))
        return found
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        found = []
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            found += value_changes(a, b, f"{path}[{index}]")
        return found
    where = path or "(whole value)"
    if isinstance(old, str) and isinstance(new, str) and ("\n" in old or "\n" in new):
        return [
            Change(
                where,
                f"{old.count(chr(10)) + 1} lines",
                f"{new.count(chr(10)) + 1} lines",
                _text_diff(old, new),
            )
        ]
    return [Change(where, show(old), show(new))]


# ----------------------------------------------------------------------------------------------
# resources


class _BodyDumper(yaml.SafeDumper):
    """Block YAML where a multi-line string (a root script) reads as written: a literal ``|`` block."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BodyDumper.add_representer(str, _text)


def body_of(inputs: dict[str, Any]) -> str:
    """A created resource's inputs as block YAML, keys sorted (the preview already masked its secrets)."""
    return yaml.dump(
        inputs, Dumper=_BodyDumper, sort_keys=True, default_flow_style=False, width=120, allow_unicode=True
    )


@dataclass(frozen=True)
class _Entry:
    """One resource of a preview as the engine matches it: its URN, the old URNs it answers to, its options."""

    urn: str
    resource: dict[str, Any]
    aliases: tuple[str, ...]
    options: ResourceOptions

    @property
    def type(self) -> str:
        return str(self.resource["type"])

    @property
    def name(self) -> str:
        return str(self.resource["name"])

    @property
    def inputs(self) -> dict[str, Any]:
        return self.resource.get("inputs") or {}


def _entries(snapshot: Snapshot | None) -> list[_Entry]:
    if snapshot is None:
        return []
    return [
        _Entry(urn, resource, aliases, options)
        for urn, resource, aliases, options in zip(
            snapshot.urns(), snapshot.resources, snapshot.aliases(), snapshot.resource_options(), strict=True
        )
    ]


def _resource_changes(base: Snapshot | None, head: Snapshot) -> tuple[list[ResourceChange], list[Move]]:
    """What the engine plans, matching by URN (and by alias, as the engine does), and the unaliased moves."""
    before = {entry.urn: entry for entry in _entries(base)}
    after = _entries(head)
    current = {entry.urn for entry in after}
    matched: set[str] = set()
    found: list[ResourceChange] = []
    created: list[_Entry] = []
    for entry in after:
        old = before.get(entry.urn)
        moved_from = ""
        if old is None:
            alias = next((a for a in entry.aliases if a in before and a not in current and a not in matched), None)
            old, moved_from = (before[alias], alias) if alias else (None, "")
        if old is None:
            created.append(entry)
            found.append(
                ResourceChange(
                    CREATE,
                    entry.type,
                    entry.name,
                    entry.resource.get("parent"),
                    urn=entry.urn,
                    body=body_of(entry.inputs),
                )
            )
            continue
        matched.add(old.urn)
        changes = tuple(value_changes(old.inputs, entry.inputs))
        if not changes and not moved_from:
            continue
        reasons = tuple(replace_reasons(entry.type, old.inputs, entry.inputs, entry.options))
        if moved_from:
            changes += (Change("(urn, by its alias)", show(moved_from), show(entry.urn)),)
        found.append(
            ResourceChange(
                REPLACE if reasons else UPDATE,
                entry.type,
                entry.name,
                entry.resource.get("parent"),
                changes,
                reasons,
                replace_note(entry.type, old.inputs, entry.inputs, entry.options)
                if reasons
                else update_note(entry.type, entry.inputs),
                urn=entry.urn,
                moved_from=moved_from,
            )
        )
    deleted = [entry for urn, entry in before.items() if urn not in matched and urn not in current]
    found += [ResourceChange(DELETE, e.type, e.name, e.resource.get("parent"), urn=e.urn) for e in deleted]
    moves = find_moves(
        [(e.urn, e.type, e.name, e.inputs) for e in created], [(e.urn, e.type, e.name, e.inputs) for e in deleted]
    )
    return found, moves


# ----------------------------------------------------------------------------------------------
# pools: MIG, drivers, the node agent


def _driver(snapshot: Snapshot | None, pool: str) -> str:
    """The pool's driver as the outputs say: ``drivers.pools.<pool>`` where the stack exports it, else the stack's."""
    if snapshot is None:
        return ""
    drivers = snapshot.outputs.get("drivers")
    drivers = drivers if isinstance(drivers, dict) else {}
    pools = drivers.get("pools")
    own = pools.get(pool) if isinstance(pools, dict) else drivers.get(pool)  # older previews: drivers.<pool>
    if isinstance(own, dict):
        version = own.get("driverVersion") or own.get("version")
        owner = drivers.get("owner") or own.get("owner") or own.get("driverOwner")
        if version or owner:
            return f"{version or '?'} ({owner or 'owner not given'})"
    if isinstance(own, str):
        return own
    operator = snapshot.outputs.get("gpuOperator")
    if not isinstance(operator, dict):
        return ""
    return f"{operator.get('driverVersion') or '?'} ({operator.get('driverOwner') or 'owner not given'})"


def _driver_resource(snapshot: Snapshot | None, pool: str) -> str:
    """The name of the pool's own driver object (``drivers.pools.<pool>.driverResource``), or ''."""
    drivers = snapshot.outputs.get("drivers") if snapshot else None
    pools = drivers.get("pools") if isinstance(drivers, dict) else None
    own = pools.get(pool) if isinstance(pools, dict) else None
    return str(own.get("driverResource") or "") if isinstance(own, dict) else ""


#: NVIDIADriver spec paths whose change is not a rollout of the driver pods by itself.
_NOT_A_ROLLOUT = ("spec.version", "spec.upgradePolicy")


def _driver_rollout(pool: str, head: Snapshot, changes: list[ResourceChange]) -> str:
    """``NVIDIADriver gpu-platform-a100 is updated (spec.tolerations): ...``: the pool's driver object changes."""
    name = _driver_resource(head, pool)
    if not name:
        return ""
    for change in changes:
        if change.action not in (UPDATE, REPLACE):
            continue
        resource = next((r for r in head.resources if r["name"] == change.name and r["type"] == change.type), None)
        metadata = ((resource or {}).get("inputs") or {}).get("metadata") or {}
        if metadata.get("name") != name:
            continue
        # The version is the driver change itself (shown as such); the upgrade policy only steers the rollout.
        paths = sorted(
            {c.path for c in change.changes if c.path.startswith("spec.") and not c.path.startswith(_NOT_A_ROLLOUT)}
        )
        if not paths and change.action != REPLACE:
            continue
        kind = change.type.rsplit(":", 1)[-1]
        shown = ", ".join(paths[:4]) + (f" and {len(paths) - 4} more" if len(paths) > 4 else "")
        verb = "replaced (deleted, then created)" if change.action == REPLACE else "updated"
        return (
            f"{kind} {name} is {verb} ({shown or 'recreated'}): the operator rolls its driver pods on every node "
            "of the pool, GPU workloads there stop while the driver reloads"
        )
    return ""


def _agent_drains(snapshot: Snapshot, pool: str) -> tuple[bool, str]:
    """Whether the node agent (output ``nodeAgent``) drains ``pool``'s nodes for a MIG change, and how."""
    agent = snapshot.outputs.get("nodeAgent")
    if isinstance(agent, dict) and agent.get("migLayout"):
        budgets = agent.get("budgets")
        budget = budgets.get(pool) if isinstance(budgets, dict) else None
        at_once = f", {budget} node(s) of the pool at a time" if budget is not None else ""
        dry = " (dryRun: it only records what it would do)" if agent.get("dryRun") else ""
        return True, f"drained by the node agent (cordon, evict GPU pods, relabel, smoke-test{at_once}){dry}"
    return False, (
        "not drained: the node agent does not manage MIG (nodeAgent.migLayout is off); mig-manager reconfigures "
        "only idle GPUs, so cordon and drain the node by hand"
    )


def _cloud_name(snapshot: Snapshot | None, pool: str) -> str:
    groups = snapshot.outputs.get("gpuNodeGroups") if snapshot else None
    group = groups.get(pool) if isinstance(groups, dict) else None
    return str(group.get("cloudName") or "") if isinstance(group, dict) else ""


def _node_group_replaced(head: Snapshot, cloud_name: str, changes: list[ResourceChange]) -> bool:
    """Whether the node group named ``cloud_name`` in ``head`` is replaced (a replace-forcing field changed).

    Read from the resource's own change, whose reasons come from the catalog's ForceNew table
    (``preview.diff.replacements``), never from a changed cloud name: the provider renames a group in place.
    """
    for change in changes:
        if change.type != NODE_GROUP_TYPE or change.action != REPLACE:
            continue
        resource = next((r for r in head.resources if r["name"] == change.name and r["type"] == change.type), None)
        if ((resource or {}).get("inputs") or {}).get("name") == cloud_name:
            return True
    return False


def _pool_changes(base: Snapshot | None, head: Snapshot, resources: list[ResourceChange]) -> list[PoolChange]:
    before = {p.name: p for p in (base.pools() if base else [])}
    after = {p.name: p for p in head.pools()}
    found = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        either = new or old
        assert either is not None
        count = max(len(old.gpus) if old else 0, len(new.gpus) if new else 0)
        gpus = tuple(GpuChange(i, _describe(old, i), _describe(new, i)) for i in range(count))
        if old is None or new is None:
            status = "added" if old is None else "removed"
        else:
            status = "changed" if old != new else "unchanged"
        drained, drain = (False, "")
        if old is not None and new is not None and any(g.repartitioned for g in gpus):
            drained, drain = _agent_drains(head, name)
        driver_before, driver_after = _driver(base, name) if old else "", _driver(head, name) if new else ""
        rollout = _driver_rollout(name, head, resources) if old and new else ""
        if old and new and (driver_before != driver_after or rollout):
            status = "changed"
        old_cloud, new_cloud = _cloud_name(base, name), _cloud_name(head, name)
        replaced = ""
        if old and new and new_cloud and _node_group_replaced(head, new_cloud, resources):
            replaced = f"every node is replaced: the group {old_cloud or '?'} gives way to {new_cloud}"
            status = "changed"
        found.append(
            PoolChange(
                name=name,
                model=either.model,
                nodes=either.max_nodes,
                status=status,
                mig_config_before=old.mig_config if old else "",
                mig_config_after=new.mig_config if new else "",
                gpus=gpus,
                before=old,
                after=new,
                driver_before=driver_before,
                driver_after=driver_after,
                drain=drain,
                drained_by_agent=drained,
                nodes_replaced=replaced,
                driver_rollout=rollout,
            )
        )
    return found


def _describe(pool: Pool | None, index: int) -> str:
    if pool is None or index >= len(pool.gpus):
        return "(no GPU)"
    gpu: Gpu = pool.gpus[index]
    return gpu.describe()


# ----------------------------------------------------------------------------------------------
# policies


def findings_of(snapshot: Snapshot | None) -> list[Finding]:
    """The snapshot's policy findings, deduplicated and sorted (none for no snapshot)."""
    if snapshot is None:
        return []
    keys = ("policy", "enforcement", "resource", "message", "origin")
    return sorted({Finding(*(str(row.get(k, "")) for k in keys)) for row in snapshot.findings}, key=_finding_key)


def _finding_key(finding: Finding) -> tuple[str, ...]:
    return (finding.policy, finding.enforcement, finding.resource, finding.message, finding.origin)


def _finding_changes(before: list[Finding], after: list[Finding]) -> tuple[list[Finding], list[Finding]]:
    """Findings that appear and disappear; the same message of the same policy is the same finding.

    A resource that moves (a new URN, a new origin) keeps its findings: counting them as "new" and "gone"
    would bury the findings that really are new.
    """

    def key(finding: Finding) -> tuple[str, str, str]:
        return (finding.policy, finding.enforcement, finding.message)

    old_keys: dict[tuple[str, str, str], int] = {}
    for finding in before:
        old_keys[key(finding)] = old_keys.get(key(finding), 0) + 1
    new_keys: dict[tuple[str, str, str], int] = {}
    for finding in after:
        new_keys[key(finding)] = new_keys.get(key(finding), 0) + 1

    def beyond(findings: list[Finding], other: dict[tuple[str, str, str], int]) -> list[Finding]:
        left = dict(other)
        kept = []
        for finding in findings:
            if left.get(key(finding), 0) > 0:
                left[key(finding)] -= 1
            else:
                kept.append(finding)
        return kept

    return beyond(after, old_keys), beyond(before, new_keys)


def verdict_of(findings: list[Finding]) -> Verdict:
    """Counts of mandatory and advisory findings."""
    mandatory = sum(1 for f in findings if f.enforcement == "mandatory")
    return Verdict(mandatory, len(findings) - mandatory)


def diff_snapshots(base: Snapshot | None, head: Snapshot, base_label: str, head_label: str) -> StackDiff:
    """The diff of one stack from ``base`` (None: the stack has no base preview) to ``head``."""
    before, after = findings_of(base), findings_of(head)
    appeared, disappeared = _finding_changes(before, after)
    resources, moves = _resource_changes(base, head)
    return StackDiff(
        stack=head.stack,
        base=base_label,
        head=head_label,
        resources=resources,
        outputs=value_changes(base.outputs if base else {}, head.outputs),
        pools=_pool_changes(base, head, resources),
        appeared=appeared,
        disappeared=disappeared,
        verdict_before=verdict_of(before) if base else None,
        verdict_after=verdict_of(after),
        resources_after=len(head.resources),
        findings_after=after,
        moves=moves,
        platform_switch=platform_switch_refusals(
            base.outputs if base else None, head.outputs, ((r.type, r.name) for r in resources if r.action == DELETE)
        ),
    )
