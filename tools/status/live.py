"""The live side: what the cluster says, read once through the official Kubernetes client, read only.

Credentials are the client's own (``kubernetes.config``): a kubeconfig with a token, a client certificate or an
exec credential plugin (the Yandex kubeconfig the stack exports runs ``yc k8s create-token``), or, in a pod, the
pod's ServiceAccount (in-cluster config). Nothing is written back, not even a refreshed token
(``persist_config=False``).

Three reads, each a list (paginated) and nothing else: the server's version, every Node, and the GPU Operator's
driver pods in its namespace by the label every driver pod carries (``app.kubernetes.io/component=nvidia-driver``,
both driver modes; ``components.catalog.gpu_operator_upgrade``). Objects are kept as the API's JSON (plain dicts),
as the node agent and the proof read them.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.config import incluster_config
from kubernetes.config.config_exception import ConfigException

from components.catalog.gpu_operator_upgrade import DRIVER_COMPONENT, DRIVER_COMPONENT_LABEL

#: Objects per list call: a 500-node fleet is one page, a large one a few.
PAGE_SIZE = 500
#: Seconds to connect, then to read one answer.
TIMEOUT = (10.0, 60.0)
#: Where a pod finds its ServiceAccount (kubernetes.config.incluster_config); module attributes so a test can
#: point them at files of its own.
SERVICE_TOKEN_FILENAME = incluster_config.SERVICE_TOKEN_FILENAME
SERVICE_CERT_FILENAME = incluster_config.SERVICE_CERT_FILENAME


class ClusterUnreadable(Exception):
    """The cluster cannot be read at all; ``str()`` is one line: what failed and what to check."""


class _Errors(logging.Handler):
    """The errors the client's kubeconfig loader logs instead of raising: a failed exec credential plugin (its exit
    code and stderr) is logged and the client goes on without credentials (kubernetes.config.kube_config
    ``_load_from_exec_plugin``), which the server would only answer with an anonymous 403."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@dataclass(frozen=True)
class LiveCluster:
    """What one read of the cluster returned."""

    server: str
    version: str
    nodes: list[dict[str, Any]]
    #: The driver pods in the operator's namespace; None when they could not be listed (see ``driver_pods_error``).
    driver_pods: list[dict[str, Any]] | None
    driver_pods_error: str = ""


def _default_kubeconfig() -> str:
    """``KUBECONFIG`` (one or more files, ``:``-separated, merged by the client), else ``~/.kube/config``: read
    now, not when the client was imported (``kubernetes.config.kube_config.KUBE_CONFIG_DEFAULT_LOCATION``)."""
    return os.environ.get("KUBECONFIG") or "~/.kube/config"


def _kubeconfig_files() -> list[str]:
    """The default kubeconfig files that exist."""
    paths = _default_kubeconfig().split(os.pathsep)
    return [path for path in paths if path and Path(path).expanduser().is_file()]


def api_client(kubeconfig: str | None = None, context: str | None = None) -> k8s_client.ApiClient:
    """A client for the cluster: ``kubeconfig`` (else ``KUBECONFIG``, else ``~/.kube/config``) and ``context``
    (else the file's current context); in a pod without any kubeconfig, the pod's ServiceAccount."""
    configuration = k8s_client.Configuration()
    try:
        if kubeconfig is None and not _kubeconfig_files() and incluster_config.SERVICE_HOST_ENV_NAME in os.environ:
            if context is not None:
                raise ClusterUnreadable(f"--context {context} needs a kubeconfig, and none was found")
            incluster_config.InClusterConfigLoader(
                token_filename=SERVICE_TOKEN_FILENAME, cert_filename=SERVICE_CERT_FILENAME
            ).load_and_set(configuration)
        else:
            if kubeconfig is not None and not Path(kubeconfig).expanduser().is_file():
                raise ClusterUnreadable(f"kubeconfig {kubeconfig} not found")
            if kubeconfig is None and not _kubeconfig_files():
                raise ClusterUnreadable(
                    "no kubeconfig: give --kubeconfig FILE or set KUBECONFIG (for the stack's own: "
                    "pulumi stack output kubeconfig --show-secrets > kubeconfig)"
                )
            errors = _Errors()
            logging.getLogger().addHandler(errors)
            try:
                k8s_config.load_kube_config(
                    config_file=kubeconfig or _default_kubeconfig(),
                    context=context,
                    client_configuration=configuration,
                    persist_config=False,
                )
            finally:
                logging.getLogger().removeHandler(errors)
            if errors.messages:
                raise ClusterUnreadable(f"cannot use the kubeconfig: {_one_line('; '.join(errors.messages))}")
    except ConfigException as error:
        raise ClusterUnreadable(f"cannot use the kubeconfig: {_one_line(str(error))}") from None
    except OSError as error:
        raise ClusterUnreadable(f"cannot use the kubeconfig: {error}") from None
    return k8s_client.ApiClient(configuration)


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else f"{line[: limit - 1]}…"


def _failure(error: Exception) -> str:
    """One line for a failed call: the API's own Status message where it sent one."""
    if isinstance(error, k8s_client.ApiException):
        message = ""
        try:
            body = json.loads(error.body or "")
            message = str(body.get("message", "")) if isinstance(body, dict) else ""
        except ValueError:
            message = error.body or ""
        status = f"{error.status} {error.reason or ''}".strip()
        return _one_line(f"{status}: {message}" if message else status)
    if isinstance(error, urllib3.exceptions.MaxRetryError) and error.reason is not None:
        return _one_line(str(error.reason))
    return _one_line(f"{type(error).__name__}: {error}")


def _json(response: Any) -> dict[str, Any]:
    data = json.loads(response.data)
    if not isinstance(data, dict):
        raise ValueError("the answer is not a JSON object")
    return data


def _list_all(call: Callable[..., Any], **kwargs: Any) -> list[dict[str, Any]]:
    """Every item of a paginated list; a 410 (the continue token expired) lists again from the start, once."""
    for attempt in range(2):
        items: list[dict[str, Any]] = []
        token: str | None = None
        try:
            while True:
                page = _json(
                    call(limit=PAGE_SIZE, _continue=token, _preload_content=False, _request_timeout=TIMEOUT, **kwargs)
                )
                items.extend(page.get("items") or [])
                token = (page.get("metadata") or {}).get("continue") or None
                if not token:
                    return items
        except k8s_client.ApiException as error:
            if error.status != 410 or attempt:
                raise
    raise AssertionError("unreachable")


def read_cluster(api: k8s_client.ApiClient, operator_namespace: str | None) -> LiveCluster:
    """The server's version, every Node, and the driver pods; ``ClusterUnreadable`` when the nodes cannot be read.

    A driver pod list that fails (RBAC: the reader may list nodes but not the operator's pods) does not stop the
    report: each node's driver is then unknown, and says why.
    """
    server = str(api.configuration.host)
    core = k8s_client.CoreV1Api(api)
    try:
        version = _json(k8s_client.VersionApi(api).get_code(_preload_content=False, _request_timeout=TIMEOUT))
        nodes = _list_all(core.list_node)
    except (k8s_client.ApiException, urllib3.exceptions.HTTPError, OSError, ValueError) as error:
        raise ClusterUnreadable(f"cannot read the cluster at {server}: {_failure(error)}") from None
    except ConfigException as error:  # an exec credential plugin that fails when the token is refreshed
        raise ClusterUnreadable(f"cannot authenticate to {server}: {_one_line(str(error))}") from None
    driver_pods: list[dict[str, Any]] | None = []
    error_text = ""
    if operator_namespace is not None:
        try:
            driver_pods = _list_all(
                core.list_namespaced_pod,
                namespace=operator_namespace,
                label_selector=f"{DRIVER_COMPONENT_LABEL}={DRIVER_COMPONENT}",
            )
        except (k8s_client.ApiException, urllib3.exceptions.HTTPError, OSError, ValueError) as error:
            driver_pods, error_text = None, _failure(error)
    return LiveCluster(
        server=server,
        version=str(version.get("gitVersion", "")),
        nodes=nodes,
        driver_pods=driver_pods,
        driver_pods_error=error_text,
    )
