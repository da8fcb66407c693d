"""What both example stacks deploy, rendered with the real kustomize from the real kubeflow/manifests v1.10.2.

Every ``kustomize.v2.Directory`` the program registers is rendered from the path it registers
(``stack_renders`` in conftest.py); upstream's ``example/`` is rendered once here for comparison. The
credential checks run on upstream's render too, so a check that finds nothing is a check that would
have found the defaults.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.catalog.kubeflow.releases import DEFAULT_TAG, MANIFESTS_TAGS
from components.catalog.kubeflow.v1_10_2.components import CERT_MANAGER
from components.catalog.kubeflow.v1_10_2.credentials import (
    DEFAULT_MINIO_SECRET_KEY,
    MINIO_ACCESS_KEY_LENGTH,
    MINIO_SECRET_KEY_LENGTH,
    OAUTH2_PROXY_COOKIE_SECRET_BYTES,
    PUBLIC_DEFAULT_CREDENTIALS,
)
from components.catalog.kubeflow.v1_10_2.login import (
    DEX_CONFIG_KEY,
    DEX_CONFIGMAP,
    DEX_NAMESPACE,
    OAUTH2_PROXY_PARAMETERS_CONFIGMAP,
)
from components.catalog.kubeflow.v1_10_2.replaced import (
    KATIB_MYSQL,
    KATIB_MYSQL_SECRET,
    MYSQL_ALLOW_EMPTY_PASSWORD_ENV,
    MYSQL_ROOT_PASSWORD_ENV,
    OAUTH2_PROXY_SECRET,
    PIPELINES_MINIO_SECRET,
    PIPELINES_MYSQL,
    PIPELINES_MYSQL_SECRET,
    PROFILE_CONTROLLER_CONFIGMAP_PREFIX,
    PROFILE_CONTROLLER_SCRIPT,
    REPLACED_SECRETS,
    SECRET_CONSUMERS,
    SECRET_NAMESPACES,
    WORKFLOW_CONTROLLER_CONFIGMAP,
)
from components.catalog.kubeflow.v1_10_2.spawner import SPAWNER_CONFIG_KEY, SPAWNER_CONFIGMAP, SPAWNER_NAMESPACE
from components.catalog.kubeflow.v1_10_2.webhooks import WEBHOOK_SERVERS
from components.catalog.names import DEPENDS_ON_ANNOTATION
from components.catalog.upstream import KUBEFLOW_MANIFESTS
from components.kubeflow.component import overlay_dir
from components.kubeflow.readme import review_command
from components.kubeflow.stages import FOUNDATION, PLATFORM, STAGES
from preview.run.files import kustomize_files
from tests.kubeflow.conftest import STACKS, StackRender
from tests.kubeflow.kustomize import (
    KUBECTL,
    REPO_ROOT,
    Key,
    Obj,
    canonical,
    containers,
    find,
    key,
    parse,
    secret_values,
    upstream_build,
)

TREE = REPO_ROOT / KUBEFLOW_MANIFESTS.path
SECRET = "kubernetes:core/v1:Secret"
NAMESPACE = "kubernetes:core/v1:Namespace"
DIRECTORY = "kubernetes:kustomize/v2:Directory"
_HASH_SUFFIX = re.compile(r"-[a-z0-9]{10}$")
_WEBHOOK_KINDS = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
_CREDENTIAL_VARIABLE = re.compile(r"PASSWORD|SECRET|ACCESS_?KEY|TOKEN", re.IGNORECASE)


@pytest.fixture(scope="module")
def example() -> list[Obj]:
    """Upstream's ``kustomize build example``: what the upstream install deploys."""
    return upstream_build(TREE / "example")


@pytest.fixture(params=STACKS)
def stack(request: pytest.FixtureRequest, stack_renders: dict[str, StackRender]) -> StackRender:
    render: StackRender = stack_renders[request.param]
    return render


def public_defaults_found(objects: list[Obj]) -> set[str]:
    """Every upstream default credential in ``objects``: Secret values (decoded), ConfigMaps, env values.

    Values of 8 characters or more are looked for anywhere in the render; the short ones (``test``,
    ``minio``, an empty password) only where a credential sits: as a Secret value, a whole ConfigMap
    value or a literal env value (``test`` is also a word in many descriptions).
    """
    found: set[str] = set()
    text = canonical(objects)
    long_values = {d.value for d in PUBLIC_DEFAULT_CREDENTIALS if len(d.value) >= 8}
    short_values = {d.value for d in PUBLIC_DEFAULT_CREDENTIALS if d.value and len(d.value) < 8}
    for value in long_values:
        if value in text:
            found.add(f"text contains {value!r}")
    for obj in objects:
        namespace, name = obj["metadata"].get("namespace", ""), obj["metadata"]["name"]
        if obj["kind"] == "Secret":
            for item, value in secret_values(obj):
                for default in PUBLIC_DEFAULT_CREDENTIALS:
                    same_key = (default.namespace, default.key) == (namespace, item) and name.startswith(default.secret)
                    if (
                        (default.value in long_values and default.value in value)
                        or (default.value and value == default.value)
                        or (same_key and value == default.value)
                    ):
                        found.add(f"Secret {namespace}/{name} {item}")
        elif obj["kind"] == "ConfigMap":
            for item, value in (obj.get("data") or {}).items():
                if str(value) in short_values:
                    found.add(f"ConfigMap {namespace}/{name} {item}")
        for container in containers(obj):
            for env in container.get("env") or []:
                if env["name"] == MYSQL_ALLOW_EMPTY_PASSWORD_ENV or (
                    "value" in env
                    and _CREDENTIAL_VARIABLE.search(env["name"])
                    and (str(env["value"]) in short_values or str(env["value"]) == "")
                ):
                    found.add(f"{obj['kind']} {namespace}/{name} {container['name']} {env['name']}")
    return found


def secret_references(objects: list[Obj]) -> set[tuple[str, str, str, str | None, str, str | None]]:
    """(namespace, workload, container, variable or None for envFrom, secret, key) of every replaced Secret read."""
    replaced = {s.name for s in REPLACED_SECRETS}
    found = set()
    for obj in objects:
        namespace, name = obj["metadata"].get("namespace", ""), obj["metadata"]["name"]
        for container in containers(obj):
            for env in container.get("env") or []:
                ref = (env.get("valueFrom") or {}).get("secretKeyRef")
                if ref and ref["name"] in replaced:
                    found.add((namespace, name, container["name"], env["name"], ref["name"], ref["key"]))
            for source in container.get("envFrom") or []:
                ref = source.get("secretRef")
                if ref and ref["name"] in replaced:
                    found.add((namespace, name, container["name"], None, ref["name"], None))
    return found


def _normalized(objects: list[Obj]) -> dict[Key, Obj]:
    """Objects by key, generated ConfigMap/Secret names without kustomize's content-hash suffix."""
    result = {}
    for obj in objects:
        kind, namespace, name = key(obj)
        if kind in ("ConfigMap", "Secret"):
            name = _HASH_SUFFIX.sub("", name)
        result[(kind, namespace, name)] = obj
    return result


def _without_name(obj: Obj) -> str:
    return canonical({**obj, "metadata": {**obj["metadata"], "name": ""}})


# --------------------------------------------------------------------------------------------
# Every Directory builds
# --------------------------------------------------------------------------------------------


def test_every_registered_directory_builds_from_the_pinned_tree(stack: StackRender) -> None:
    paths = {r.name: r.inputs["directory"] for r in stack.run.by_type(DIRECTORY)}
    base = overlay_dir(stack.run.stack).as_posix()
    assert paths == {f"kubeflow-{s.directory}": f"{base}/{s.directory}" for s in STAGES}
    for name, objects in stack.directories.items():
        assert objects, f"{name} renders nothing"
    assert not [n for n in stack.run.notices if n.startswith("kubeflow.manifestsPath")], "the pinned tree is in place"


def test_each_stage_holds_its_components(stack: StackRender) -> None:
    foundation = stack.directories[f"kubeflow-{FOUNDATION.directory}"]
    platform = stack.directories[f"kubeflow-{PLATFORM.directory}"]
    cert_manager = stack.run.stack == "dev"
    assert {o["metadata"]["name"] for o in foundation if o["kind"] == "Namespace"} == (
        {"istio-system", "cert-manager"} if cert_manager else {"istio-system"}
    )
    assert find(foundation, "Deployment", "istiod", "istio-system")
    assert find(foundation, "MutatingWebhookConfiguration", "istio-sidecar-injector")
    assert (
        bool([o for o in foundation if key(o) == ("Deployment", "cert-manager", "cert-manager-webhook")])
        is cert_manager
    )
    # Everything a cert-manager webhook validates comes later, in platform.
    assert not [o for o in foundation if o["apiVersion"].startswith("cert-manager.io/")]
    assert [o for o in platform if o["kind"] == "Certificate"]
    assert bool([o for o in platform if o["kind"] == "ClusterIssuer"]) is cert_manager
    assert not {key(o) for o in foundation} & {key(o) for o in platform}, "no object is deployed twice"


# --------------------------------------------------------------------------------------------
# No public default credential
# --------------------------------------------------------------------------------------------


def test_upstream_example_carries_every_catalogued_default(example: list[Obj]) -> None:
    found = public_defaults_found(example)
    for default in PUBLIC_DEFAULT_CREDENTIALS:
        assert any(
            f.startswith(f"Secret {default.namespace}/{default.secret}") and f.endswith(default.key) for f in found
        ), default
    assert "Deployment kubeflow/mysql mysql MYSQL_ALLOW_EMPTY_PASSWORD" in found
    assert f"text contains {DEFAULT_MINIO_SECRET_KEY!r}" in found


def test_catalogued_defaults_are_every_credential_secret_upstream_renders(example: list[Obj]) -> None:
    """Every upstream Secret with a non-empty value is catalogued (certificate Secrets are empty)."""
    with_values = {
        (o["metadata"]["namespace"], _HASH_SUFFIX.sub("", o["metadata"]["name"]))
        for o in example
        if o["kind"] == "Secret" and any(value for _key, value in secret_values(o))
    }
    assert with_values == {(s.namespace, s.name) for s in REPLACED_SECRETS}


def test_no_upstream_default_credential_in_any_rendered_object(stack: StackRender) -> None:
    assert public_defaults_found(stack.objects) == set()
    rendered_secrets = {
        (o["metadata"]["namespace"], _HASH_SUFFIX.sub("", o["metadata"]["name"]))
        for o in stack.objects
        if o["kind"] == "Secret"
    }
    assert not rendered_secrets & {(s.namespace, s.name) for s in REPLACED_SECRETS}


def test_program_replaces_every_deleted_secret_with_pulumi_secrets(stack: StackRender) -> None:
    created = {(r.inputs["metadata"]["namespace"], r.inputs["metadata"]["name"]): r for r in stack.run.by_type(SECRET)}
    assert set(created) == {(s.namespace, s.name) for s in REPLACED_SECRETS}
    values = {s.value for s in PUBLIC_DEFAULT_CREDENTIALS if s.value}
    for replaced in REPLACED_SECRETS:
        registration = created[(replaced.namespace, replaced.name)]
        assert set(registration.inputs["stringData"]) == set(replaced.keys)
        assert registration.masked_inputs["stringData"] == dict.fromkeys(replaced.keys, "[secret]")
        for item, value in registration.inputs["stringData"].items():
            assert value not in values, f"{replaced.name} {item}"
            assert value, f"{replaced.name} {item} is empty"
    minio = created[("kubeflow", PIPELINES_MINIO_SECRET.name)].inputs["stringData"]
    assert (len(minio["accesskey"]), len(minio["secretkey"])) == (
        MINIO_ACCESS_KEY_LENGTH,
        MINIO_SECRET_KEY_LENGTH,
    )
    proxy = created[("oauth2-proxy", OAUTH2_PROXY_SECRET.name)].inputs["stringData"]
    assert len(proxy["cookie-secret"]) in OAUTH2_PROXY_COOKIE_SECRET_BYTES


# --------------------------------------------------------------------------------------------
# Every consumer reads the replacement
# --------------------------------------------------------------------------------------------


def test_every_consumer_reads_the_program_created_secret(stack: StackRender) -> None:
    found = secret_references(stack.objects)
    expected = {(c.namespace, c.deployment, c.container, c.variable, c.secret, c.key) for c in SECRET_CONSUMERS}
    namespace, deployment, container = PIPELINES_MYSQL
    mysql_server = (
        namespace,
        deployment,
        container,
        MYSQL_ROOT_PASSWORD_ENV,
        PIPELINES_MYSQL_SECRET.name,
        "password",
    )
    assert found == expected | {mysql_server}
    created = {
        (r.inputs["metadata"]["namespace"], r.inputs["metadata"]["name"]): set(r.inputs["stringData"])
        for r in stack.run.by_type(SECRET)
    }
    for namespace, _workload, _container, _variable, secret, item in found:
        assert (namespace, secret) in created, f"nobody creates {namespace}/{secret}"
        assert item is None or item in created[(namespace, secret)], f"{namespace}/{secret} has no key {item}"


def test_mysql_servers_require_their_root_password(stack: StackRender) -> None:
    for namespace, name, container_name in (PIPELINES_MYSQL, KATIB_MYSQL):
        [container] = [
            c for c in containers(find(stack.objects, "Deployment", name, namespace)) if c["name"] == container_name
        ]
        env = {e["name"]: e for e in container["env"]}
        assert MYSQL_ALLOW_EMPTY_PASSWORD_ENV not in env
        assert env[MYSQL_ROOT_PASSWORD_ENV]["valueFrom"]["secretKeyRef"]["name"] in {
            PIPELINES_MYSQL_SECRET.name,
            KATIB_MYSQL_SECRET.name,
        }


def test_profile_namespaces_get_the_replacement_minio_keys(stack: StackRender) -> None:
    """The Pipelines profile controller copies its own env (read from the kubeflow Secret) into every profile."""
    [code] = [
        o
        for o in stack.objects
        if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith(PROFILE_CONTROLLER_CONFIGMAP_PREFIX)
    ]
    sync = code["data"][PROFILE_CONTROLLER_SCRIPT]
    assert 'os.environ.get("MINIO_ACCESS_KEY")' in sync and 'os.environ.get("MINIO_SECRET_KEY")' in sync
    assert re.search(r'"kind": "Secret",\s*"metadata": \{\s*"name": "mlpipeline-minio-artifact"', sync)
    assert '"accesskey": minio_access_key' in sync and '"secretkey": minio_secret_key' in sync
    artifacts = yaml.safe_load(
        find(stack.objects, "ConfigMap", WORKFLOW_CONTROLLER_CONFIGMAP, "kubeflow")["data"]["artifactRepository"]
    )
    assert artifacts["s3"]["accessKeySecret"] == {"name": PIPELINES_MINIO_SECRET.name, "key": "accesskey"}
    assert artifacts["s3"]["secretKeySecret"] == {"name": PIPELINES_MINIO_SECRET.name, "key": "secretkey"}


def test_dex_and_oauth2_proxy_read_the_replacements(stack: StackRender) -> None:
    dex = yaml.safe_load(find(stack.objects, "ConfigMap", DEX_CONFIGMAP, DEX_NAMESPACE)["data"][DEX_CONFIG_KEY])
    user = {"dev": ("ml-platform@example.com", "ml-platform"), "prod": ("ml-admin@example.com", "ml-admin")}[
        stack.run.stack
    ]
    assert [(p["email"], p["username"], p["hashFromEnv"]) for p in dex["staticPasswords"]] == [
        (*user, "DEX_USER_PASSWORD")
    ]
    assert dex["staticClients"][0]["secretEnv"] == "OIDC_CLIENT_SECRET"
    [parameters] = [o for o in stack.objects if o["metadata"]["name"].startswith(OAUTH2_PROXY_PARAMETERS_CONFIGMAP)]
    assert parameters["data"]["FORCE_HTTPS"] == "true"
    [proxy] = containers(find(stack.objects, "Deployment", "oauth2-proxy", "oauth2-proxy"))
    refs = {
        e["valueFrom"]["configMapKeyRef"]["name"] for e in proxy["env"] if "configMapKeyRef" in e.get("valueFrom", {})
    }
    assert refs == {parameters["metadata"]["name"]}, "the Deployment follows the re-hashed parameters"


# --------------------------------------------------------------------------------------------
# The program's Namespaces and the order
# --------------------------------------------------------------------------------------------


def test_program_namespaces_carry_upstreams_labels(stack: StackRender, example: list[Obj]) -> None:
    created = {
        r.inputs["metadata"]["name"]: r.inputs["metadata"]
        for r in stack.run.by_type(NAMESPACE)
        if r.parent_name == "kubeflow"
    }
    assert set(created) == {n.name for n in SECRET_NAMESPACES}
    for namespace in SECRET_NAMESPACES:
        upstream = find(example, "Namespace", namespace.name)["metadata"]
        assert created[namespace.name].get("labels") == upstream["labels"] == dict(namespace.labels)
        assert not upstream.get("annotations")


def test_secrets_and_namespaces_exist_before_the_platform(stack: StackRender) -> None:
    run = stack.run
    foundation = run.one(DIRECTORY, f"kubeflow-{FOUNDATION.directory}")
    platform = run.one(DIRECTORY, f"kubeflow-{PLATFORM.directory}")
    namespaces = {r.inputs["metadata"]["name"]: r for r in run.by_type(NAMESPACE) if r.parent_name == "kubeflow"}
    for secret in run.by_type(SECRET):
        assert namespaces[secret.inputs["metadata"]["namespace"]].urn in secret.dependencies
        assert secret.urn in platform.dependencies
    assert {n.urn for n in namespaces.values()} <= set(platform.dependencies)
    assert foundation.urn in platform.dependencies
    assert foundation.dependencies == []
    for later in (
        run.one("kubernetes:networking.k8s.io/v1:Ingress", "kubeflow-ingress"),
        *run.by_type("kubernetes:kubeflow.org/v1:Profile"),
    ):
        assert platform.urn in later.dependencies


# --------------------------------------------------------------------------------------------
# Compared with upstream's example/
# --------------------------------------------------------------------------------------------


def test_stages_are_the_example_minus_what_the_program_owns_and_what_is_left_out(
    stack: StackRender, example: list[Obj]
) -> None:
    """The documented difference (docs/kubeflow.md, "Compared with upstream's example/"), object by object."""
    ours, theirs = _normalized(stack.objects), _normalized(example)
    left_out_paths = [
        path
        for component, path in MANIFESTS_TAGS[DEFAULT_TAG].example_resources
        if component == "user-namespace" or (component == CERT_MANAGER and stack.run.stack == "prod")
    ]
    left_out = {k for path in left_out_paths for k in _normalized(upstream_build(TREE / path))}
    owned = {("Namespace", "", n.name) for n in SECRET_NAMESPACES} | {
        ("Secret", s.namespace, s.name) for s in REPLACED_SECRETS
    }
    assert set(ours) - set(theirs) == set()
    assert set(theirs) - set(ours) == owned | left_out
    changed = {k for k in set(ours) & set(theirs) if _without_name(ours[k]) != _without_name(theirs[k])}
    webhooks = {k for k in changed if k[0] in _WEBHOOK_KINDS}
    assert (
        changed - webhooks
        == {
            ("ConfigMap", "auth", DEX_CONFIGMAP),  # the configured dex user
            ("ConfigMap", "oauth2-proxy", OAUTH2_PROXY_PARAMETERS_CONFIGMAP),  # FORCE_HTTPS=true, so a new hash
            ("Deployment", "oauth2-proxy", "oauth2-proxy"),  # follows the re-hashed ConfigMap and the plain Secret name
            ("Deployment", *PIPELINES_MYSQL[:2]),  # reads its root password from mysql-secret
            ("Deployment", *KATIB_MYSQL[:2]),  # no MYSQL_ALLOW_EMPTY_PASSWORD
            ("ConfigMap", SPAWNER_NAMESPACE, SPAWNER_CONFIGMAP),  # the fleet's MIG resources and pools
            ("Deployment", SPAWNER_NAMESPACE, "jupyter-web-app-deployment"),  # follows the re-hashed ConfigMap
        }
    )
    platform = {key(o) for o in stack.directories[f"kubeflow-{PLATFORM.directory}"] if o["kind"] in _WEBHOOK_KINDS}
    assert webhooks == platform, "every platform webhook, and only those, gained an annotation"
    for webhook in webhooks:  # ... and nothing else
        annotations = dict(ours[webhook]["metadata"]["annotations"])
        del annotations[DEPENDS_ON_ANNOTATION]
        unannotated = {**ours[webhook], "metadata": {**ours[webhook]["metadata"], "annotations": annotations}}
        if not annotations:
            del unannotated["metadata"]["annotations"]
        assert canonical(unannotated) == canonical(theirs[webhook]), webhook


# --------------------------------------------------------------------------------------------
# The overlay's README
# --------------------------------------------------------------------------------------------


def test_readme_review_command_works_from_the_preview_copy(stack_renders: dict[str, StackRender]) -> None:
    run = stack_renders["dev"].run
    files = kustomize_files(run)
    command = review_command(overlay_dir("dev"), FOUNDATION)
    assert f"`{command}`" in files["kubeflow/README.md"]
    (REPO_ROOT / "build").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=REPO_ROOT / "build") as tmp:
        copy = Path(tmp) / "preview" / "dev" / "kubeflow"  # the depth of build/preview/<stack>/kubeflow/
        for relative, text in files.items():
            target = copy.parent / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        env: dict[str, Any] = {**os.environ, "PATH": f"{KUBECTL.parent}{os.pathsep}{os.environ['PATH']}"}
        result = subprocess.run(["bash", "-c", command], cwd=copy, env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    rendered = parse(result.stdout)
    assert {key(o) for o in rendered} == {key(o) for o in stack_renders["dev"].directories["kubeflow-foundation"]}


# --------------------------------------------------------------------------------------------
# Webhooks after their servers
# --------------------------------------------------------------------------------------------


def webhook_servers(objects: list[Obj]) -> set[tuple[str, str, str, str]]:
    """(webhook kind, webhook name, namespace, Deployment) where the webhook's Service selects the Deployment's pods."""
    services = {
        (o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objects if o["kind"] == "Service"
    }
    deployments = [o for o in objects if o["kind"] == "Deployment"]
    found = set()
    for webhook in (o for o in objects if o["kind"] in _WEBHOOK_KINDS):
        for hook in webhook["webhooks"]:
            ref = hook["clientConfig"]["service"]
            selector = services[(ref["namespace"], ref["name"])]["spec"]["selector"]
            for deployment in deployments:
                labels = deployment["spec"]["template"]["metadata"].get("labels") or {}
                if deployment["metadata"]["namespace"] == ref["namespace"] and selector.items() <= labels.items():
                    found.add(
                        (webhook["kind"], webhook["metadata"]["name"], ref["namespace"], deployment["metadata"]["name"])
                    )
    return found


def test_catalogued_webhook_servers_are_upstreams(example: list[Obj]) -> None:
    assert webhook_servers(example) == {(w.kind, w.name, w.namespace, w.deployment) for w in WEBHOOK_SERVERS}


def test_platform_webhooks_wait_for_their_servers_and_foundation_ones_do_not(stack: StackRender) -> None:
    platform = stack.directories[f"kubeflow-{PLATFORM.directory}"]
    foundation = stack.directories[f"kubeflow-{FOUNDATION.directory}"]
    servers = {
        (kind, name): f"apps/namespaces/{ns}/Deployment/{deployment}"
        for kind, name, ns, deployment in webhook_servers(platform)
    }
    webhooks = [o for o in platform if o["kind"] in _WEBHOOK_KINDS]
    assert len(webhooks) == len(servers) >= 15, "every platform webhook is served from inside the platform"
    for webhook in webhooks:
        annotations = webhook["metadata"].get("annotations") or {}
        assert annotations.get(DEPENDS_ON_ANNOTATION) == servers[(webhook["kind"], webhook["metadata"]["name"])]
    for webhook in (o for o in foundation if o["kind"] in _WEBHOOK_KINDS):
        assert DEPENDS_ON_ANNOTATION not in (webhook["metadata"].get("annotations") or {}), webhook["metadata"]["name"]


# --------------------------------------------------------------------------------------------
# The notebook spawner: the fleet's MIG resources and GPU pools
# --------------------------------------------------------------------------------------------

MIG_PREFIX = "nvidia.com/mig-"


def _spawner(objects: list[Obj]) -> tuple[Obj, str]:
    """The rendered spawner ConfigMap (any content hash) and its config text."""
    (configmap,) = [
        o
        for o in objects
        if o["kind"] == "ConfigMap"
        and o["metadata"].get("namespace") == SPAWNER_NAMESPACE
        and _HASH_SUFFIX.sub("", o["metadata"]["name"]) == SPAWNER_CONFIGMAP
    ]
    return configmap, configmap["data"][SPAWNER_CONFIG_KEY]


def test_spawner_lists_nvidia_gpu_and_every_mig_resource_the_fleet_advertises(
    stack: StackRender, example: list[Obj]
) -> None:
    _configmap, text = _spawner(stack.objects)
    _theirs, upstream = _spawner(example)
    vendors = yaml.safe_load(text)["spawnerFormDefaults"]["gpus"]["value"]["vendors"]
    advertised = stack.run.outputs["gpuOperator"]["gpuResourceNames"]
    mig = [name for name in advertised if name.startswith(MIG_PREFIX)]
    assert mig, "both example stacks run the mixed strategy"
    keys = [vendor["limitsKey"] for vendor in vendors]
    upstream_keys = [
        v["limitsKey"] for v in yaml.safe_load(upstream)["spawnerFormDefaults"]["gpus"]["value"]["vendors"]
    ]
    assert keys == [upstream_keys[0], *mig, *upstream_keys[1:]]
    assert keys[0] == "nvidia.com/gpu"
    names = {vendor["limitsKey"]: vendor["uiName"] for vendor in vendors}
    assert {name: names[name] for name in mig} == {name: f"NVIDIA MIG {name.removeprefix(MIG_PREFIX)}" for name in mig}
    if stack.run.stack == "dev":
        assert names == {
            "nvidia.com/gpu": "NVIDIA",
            "nvidia.com/mig-1g.10gb": "NVIDIA MIG 1g.10gb",
            "amd.com/gpu": "AMD",
            "habana.ai/gaudi": "Intel Gaudi",
        }


def test_spawner_offers_each_gpu_pool_as_a_node_affinity(stack: StackRender) -> None:
    _configmap, text = _spawner(stack.objects)
    options = yaml.safe_load(text)["spawnerFormDefaults"]["affinityConfig"]["options"]
    pools = stack.run.outputs["gpuPools"]
    assert [option["configKey"] for option in options] == [f"gpu-pool-{name}" for name in pools]
    for option, (name, pool) in zip(options, pools.items(), strict=True):
        (term,) = option["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ]
        selected = {e["key"]: e["values"] for e in term["matchExpressions"] if e["operator"] == "In"}
        assert selected == {k: [v] for k, v in pool["scheduling"]["nodeSelector"].items()}, name
        assert name in option["displayName"] and pool["gpuModel"] in option["displayName"]


def test_spawner_keeps_everything_else_of_upstreams_file(stack: StackRender, example: list[Obj]) -> None:
    configmap, text = _spawner(stack.objects)
    theirs, upstream = _spawner(example)
    ours_parsed, upstream_parsed = yaml.safe_load(text), yaml.safe_load(upstream)
    for document in (ours_parsed, upstream_parsed):
        del document["spawnerFormDefaults"]["gpus"]["value"]["vendors"]
        del document["spawnerFormDefaults"]["affinityConfig"]["options"]
    assert ours_parsed == upstream_parsed
    # Byte for byte outside the two edits: every upstream line (comments included) is there, in order.
    lines = iter(text.splitlines())
    edited = {"    options: []"}  # affinityConfig.options: [] became a list
    missing = [line for line in upstream.splitlines() if line not in edited and not any(line == x for x in lines)]
    assert missing == []
    assert set(configmap["data"]) == set(theirs["data"]) == {SPAWNER_CONFIG_KEY}
    assert {k: v for k, v in configmap["metadata"].items() if k != "name"} == {
        k: v for k, v in theirs["metadata"].items() if k != "name"
    }


def test_jupyter_web_app_mounts_the_changed_spawner_config(stack: StackRender) -> None:
    configmap, _text = _spawner(stack.objects)
    deployment = find(stack.objects, "Deployment", "jupyter-web-app-deployment", SPAWNER_NAMESPACE)
    mounted = [v["configMap"]["name"] for v in deployment["spec"]["template"]["spec"]["volumes"] if "configMap" in v]
    assert configmap["metadata"]["name"] in mounted
