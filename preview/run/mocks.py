"""Pulumi mocks that answer like the clouds would, and a monitor that records what was sent.

The answers are plausible and deterministic (ids derived from names, documentation-range IP
addresses), so two previews of the same stack are byte-identical.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from google.protobuf import json_format
from pulumi.runtime import Mocks, reset_options, set_all_config, set_mocks
from pulumi.runtime.mocks import MockCallArgs, MockMonitor, MockResourceArgs

from components.catalog.names import (
    GET_CLUSTER_TOKEN,
    HELM_RELEASE_TYPE,
    NODE_GROUP_TYPE,
    RANDOM_PASSWORD_TYPE,
    REMOTE_COMMAND_TYPE,
    STACK_REFERENCE_TYPE,
    STACK_TYPE,
)
from preview.diff.urns import AliasSpec, UrnBook
from preview.run.registration import Registration, mask_like, mask_wire, reveal_connection, unwrap_wire

OFFLINE_CA = "-----BEGIN CERTIFICATE-----\nb2ZmbGluZS1wcmV2aWV3\n-----END CERTIFICATE-----\n"


def fake_id(*parts: str) -> str:
    """A stable fake id: the same inputs give the same id in every run."""
    return "offline-" + hashlib.sha256("/".join(parts).encode()).hexdigest()[:12]


class PlatformMocks(Mocks):
    """Answers resource registrations and invokes the way the real providers would."""

    def __init__(self) -> None:
        self.calls: list[MockCallArgs] = []
        self.transforms: dict[tuple[str, str], tuple[Any, ...]] = {}

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        if args.transforms:
            self.transforms[(args.typ, args.name)] = tuple(args.transforms)
        state = dict(args.inputs)
        resource_id = fake_id(args.typ, args.name)
        if args.typ == NODE_GROUP_TYPE:
            state["status"] = "running"
        elif args.typ == HELM_RELEASE_TYPE:
            state["status"] = {
                "status": "deployed",
                "name": args.inputs.get("name"),
                "namespace": args.inputs.get("namespace"),
                "revision": 1,
                "chart": args.inputs.get("chart"),
                "version": args.inputs.get("version"),
            }
        elif args.typ == RANDOM_PASSWORD_TYPE:
            length = int(args.inputs.get("length") or 16)
            digest = hashlib.sha256(f"offline-preview/{args.name}".encode()).hexdigest() * 4
            state["result"] = digest[:length]
        elif args.typ.startswith(REMOTE_COMMAND_TYPE):
            state["stdout"] = "changed: nothing"
            state["stderr"] = ""
        elif args.typ == STACK_REFERENCE_TYPE:
            state["outputs"] = {}
        return resource_id, state

    def call(self, args: MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        self.calls.append(args)
        if args.token == GET_CLUSTER_TOKEN:
            cluster_id = str(args.args.get("clusterId") or "offline-cluster")
            return {
                "id": cluster_id,
                "clusterId": cluster_id,
                "name": cluster_id,
                "status": "running",
                "health": "healthy",
                "masters": [
                    {
                        "externalV4Endpoint": "https://203.0.113.10",
                        "internalV4Endpoint": "https://10.128.0.10",
                        "clusterCaCertificate": OFFLINE_CA,
                        "version": "1.30",
                    }
                ],
            }, []
        return {}, []


class RecordingMonitor(MockMonitor):
    """A mock monitor that also keeps each registration's parent and masked inputs."""

    def __init__(self, mocks: Mocks) -> None:
        super().__init__(mocks)
        self.registrations: list[Registration] = []
        self._urns: UrnBook | None = None

    def _book(self, mock_urn: str) -> UrnBook:
        if self._urns is None:  # the stack and project are the mock's (set_mocks), read off its first URN
            stack, project = mock_urn.removeprefix("urn:pulumi:").split("::")[:2]
            self._urns = UrnBook(stack, project)
        return self._urns

    def _transforms(self, resource_type: str, name: str) -> tuple[Any, ...]:
        mocks = self.mocks
        return mocks.transforms.get((resource_type, name), ()) if isinstance(mocks, PlatformMocks) else ()

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        if request.type != STACK_TYPE:
            wire = json_format.MessageToDict(request.object)
            plain = unwrap_wire(wire)
            book = self._book(response.urn)
            aliases = [AliasSpec.from_wire(json_format.MessageToDict(a)) for a in request.aliases]
            aliases += [AliasSpec(urn=urn) for urn in request.aliasURNs]
            engine_urn = book.register(response.urn, request.parent, request.type, request.name, aliases)
            self.registrations.append(
                Registration(
                    type=request.type,
                    name=request.name,
                    urn=response.urn,
                    parent_urn=request.parent,
                    custom=bool(request.custom),
                    inputs=plain,
                    masked_inputs=reveal_connection(request.type, plain, mask_like(plain, mask_wire(wire))),
                    dependencies=list(request.dependencies),
                    transforms=self._transforms(request.type, request.name),
                    engine_urn=engine_urn,
                    aliases=book.aliases_of(engine_urn),
                    replace_on_changes=tuple(request.replaceOnChanges),
                    delete_before_replace=bool(request.deleteBeforeReplace),
                )
            )
        return response


@contextmanager
def mocked_engine(mocks: Mocks, *, project: str, stack: str, preview: bool = True) -> Iterator[RecordingMonitor]:
    """The SDK set up afresh to run a program against ``mocks`` (its own event loop, no options or config
    left from an earlier run), recording what is registered; the config is cleared and the loop closed after.
    """
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    reset_options()
    monitor = RecordingMonitor(mocks)
    set_mocks(mocks, project=project, stack=stack, preview=preview, monitor=monitor)
    try:
        yield monitor
    finally:
        set_all_config({})
        asyncio.set_event_loop(None)
        loop.close()
