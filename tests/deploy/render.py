"""Renders the kustomize overlays of deploy/k8s with `kubectl kustomize` (kubectl from $KUBECTL or
the PATH; scripts/check-deploy.sh puts the pinned one from deploy/requirements-check.txt first)."""

import os
import pathlib
import subprocess

import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
K8S = REPO / "deploy" / "k8s"
OVERLAYS = sorted(p.name for p in (K8S / "overlays").iterdir() if (p / "kustomization.yaml").exists())


def render(path: pathlib.Path) -> list[dict]:
    kubectl = os.environ.get("KUBECTL", "kubectl")
    result = subprocess.run([kubectl, "kustomize", str(path)], capture_output=True, text=True,
                            check=False)
    if result.returncode != 0:
        raise RuntimeError(f"kubectl kustomize {path} failed:\n{result.stderr}")
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def render_overlay(name: str) -> list[dict]:
    return render(K8S / "overlays" / name)
