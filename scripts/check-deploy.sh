#!/usr/bin/env bash
# Checks the deployment artifacts without a Docker engine or a cluster (docs/operations.md,
# "Checking the deployment"):
#   1. the tools of deploy/requirements-check.txt, pinned, into $BUILD_DIR/deploy-venv (PyPI);
#   2. tests/deploy (pytest): every overlay of deploy/k8s renders with `kubectl kustomize`,
#      validates strictly against the Kubernetes 1.29-1.37 schemas (dra from 1.34;
#      kubernetes-validate; the Prometheus Operator's kinds against tests/deploy/crd_schemas),
#      meets our pod-security policy, and keeps the daemon's settings (GPU count, probes, ports,
#      flags) consistent; the Helm chart deploy/helm/distarray renders (tests/deploy/helm_render.py,
#      there being no Helm package for Debian 12) with its default values to the multi-gpu
#      overlay's objects and with ci/*-values.yaml to objects that validate the same way; the
#      image's package list matches `ldd distarrayd` and the CUDA toolkit;
#   3. checkov on the rendered manifests (overlays and the chart's values files) and the
#      Dockerfile (exceptions are checkov.io/skip annotations with their reasons), hadolint on
#      the Dockerfile;
#   4. the runtime stage as a debootstrapped Debian 12 root filesystem running the daemon
#      (deploy/container/check-runtime-rootfs.sh; needs root, skips otherwise).
# Expects a built daemon in $BUILD_DIR (scripts/build.sh). ROOTFS=0 leaves step 4 out.
# Takes about 1 min with the tools and the root filesystem in place; the first run adds about
# 1.5 min of pip and 1.5 min of debootstrap.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
venv=$build/deploy-venv
out=$build/deploy
step() { echo "deploy: == $1 ($(date -u +%H:%M:%S))"; }
start=$SECONDS

step tools
requirements=deploy/requirements-check.txt
want=$(sha256sum "$requirements" | cut -d' ' -f1)
if [ "$(cat "$venv/.requirements" 2>/dev/null)" != "$want" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
  echo "$want" > "$venv/.requirements"
fi
export PATH=$PWD/$venv/bin:$PATH KUBECTL=$PWD/$venv/bin/kubectl
echo "deploy: $(kubectl version --client | paste -sd' '), $(hadolint --version), checkov $(checkov --version)"

step "manifests and image tests"
python -m pytest -q -p no:cacheprovider tests/deploy

step checkov
mkdir -p "$out/rendered"
rm -f "$out/rendered"/*.yaml
for overlay in deploy/k8s/overlays/*/; do
  name=$(basename "$overlay")
  kubectl kustomize "$overlay" > "$out/rendered/$name.yaml"
  # checkov knows no LeaderWorkerSet (cluster-lws): the pods its controller creates go along,
  # next to the policies and Services that select them.
  python tests/deploy/lws_pods.py "$out/rendered/$name.yaml" >> "$out/rendered/$name.yaml"
done
chart=deploy/helm/distarray
python tests/deploy/helm_render.py "$chart" > "$out/rendered/helm-defaults.yaml"
for values in "$chart"/ci/*-values.yaml; do
  python tests/deploy/helm_render.py "$chart" -f "$values" \
    > "$out/rendered/helm-$(basename "$values" -values.yaml).yaml"
done
# --skip-download: no calls to the vendor's service, the checks are the ones in the package.
checkov --quiet --compact --skip-download --framework kubernetes -d "$out/rendered"
checkov --quiet --compact --skip-download --framework dockerfile -f Dockerfile

step hadolint
hadolint Dockerfile && echo "deploy: hadolint: Dockerfile clean"

if [ "${ROOTFS:-1}" != 0 ]; then
  step "runtime stage (root filesystem)"
  bash deploy/container/check-runtime-rootfs.sh
fi
step "done in $((SECONDS - start)) s"
