"""The Helm chart deploy/helm/distarray: its default values render the same objects as the
multi-gpu overlay, object by object, and its TLS and DRA values the same as the with-tls and dra
overlays, so chart and kustomize cannot drift; every values file in its ci/ renders objects that
validate strictly on the Kubernetes versions we support and meet our pod-security policy; the
schema refuses what the templates cannot render. CI renders with helm_render (no Helm on Debian
12; docs/testing.md)."""

import copy
import json
import pathlib
import re

import jsonschema
import kubernetes_validate
import pytest
import yaml

import helm_render
import policy
import render
from conftest import rendered
from test_schemas import CRD_SCHEMAS, SCHEMA_DIR, VERSIONS, _older

CHART = render.REPO / "deploy" / "helm" / "distarray"
CI_VALUES = sorted(p.name for p in (CHART / "ci").glob("*-values.yaml"))
# values file (None: the defaults) -> the overlay it must equal
EQUIVALENT = {None: "multi-gpu", "with-tls-values.yaml": "with-tls", "dra-values.yaml": "dra"}
CONFIG_HASH = "distarray.io/config-sha256"


def chart(values_file=None, **overrides):
    values = {}
    if values_file:
        values = yaml.safe_load((CHART / "ci" / values_file).read_text())
    return helm_render.render_chart(CHART, helm_render.merge_values(values, overrides))


def _key(doc):
    return doc["kind"], doc["metadata"].get("namespace"), doc["metadata"]["name"]


def _normalized(docs):
    """Objects by (kind, namespace, name), with what is meant to differ taken out: kustomize's
    hash suffix on the flags ConfigMap (and the DaemonSet's reference to it), and the chart's
    flags hash on the pod template, which do the same job (a changed flag rolls the daemons)."""
    out = {}
    for doc in copy.deepcopy(docs):
        meta = doc["metadata"]
        if doc["kind"] == "ConfigMap" and meta["name"].startswith("distarrayd-config"):
            meta["name"] = "distarrayd-config"
        if doc["kind"] == "DaemonSet" and meta["name"] == "distarrayd":
            template = doc["spec"]["template"]
            annotations = template["metadata"].get("annotations", {})
            annotations.pop(CONFIG_HASH, None)
            if not annotations:
                template["metadata"].pop("annotations", None)
            for source in template["spec"]["containers"][0].get("envFrom", []):
                ref = source.get("configMapRef", {})
                if ref.get("name", "").startswith("distarrayd-config"):
                    ref["name"] = "distarrayd-config"
        out[_key(doc)] = doc
    return out


def _differences(a, b, path=""):
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key not in a or key not in b:
                yield f"{path}.{key}: only in {'kustomize' if key in a else 'chart'}"
            else:
                yield from _differences(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            yield from _differences(x, y, f"{path}[{i}]")
    elif a != b:
        yield f"{path}: kustomize {a!r}, chart {b!r}"


@pytest.mark.parametrize("values_file", list(EQUIVALENT), ids=lambda v: v or "defaults")
def test_chart_renders_the_overlays_objects(values_file):
    overlay = EQUIVALENT[values_file]
    want = _normalized(rendered(overlay))
    got = _normalized(chart(values_file))
    assert sorted(got, key=str) == sorted(want, key=str), f"objects differ from {overlay}"
    for key, doc in want.items():
        diffs = list(_differences(doc, got[key]))
        assert not diffs, f"{key} differs from {overlay}:\n" + "\n".join(diffs)


def test_equivalence_notices_a_difference():
    """The comparison is not vacuous: one changed field of one object fails it."""
    want = _normalized(rendered("multi-gpu"))
    got = _normalized(chart(shmSizeLimit="4Gi"))
    diffs = list(_differences(want[("DaemonSet", "distarray", "distarrayd")],
                              got[("DaemonSet", "distarray", "distarrayd")]))
    assert diffs == [".spec.template.spec.volumes[0].emptyDir.sizeLimit: kustomize '8Gi', "
                     "chart '4Gi'"]


def test_chart_files_are_deploy_monitorings():
    """The chart carries copies of the dashboard and alert rules (a chart reads only its own
    files); the object comparison above covers them, this says which file to fix."""
    assert (CHART / "files" / "dashboard.json").read_text() == (
        render.REPO / "deploy" / "monitoring" / "dashboard.json").read_text()
    rule = yaml.safe_load((render.REPO / "deploy" / "monitoring" / "prometheus-rule.yaml").read_text())
    assert yaml.safe_load((CHART / "files" / "alert-rules.yaml").read_text()) == rule["spec"]


def test_ci_values_cover_the_choices():
    assert {"with-tls-values.yaml", "dra-values.yaml", "dra-count-values.yaml", "host-values.yaml",
            "single-gpu-values.yaml"} <= set(CI_VALUES)


@pytest.fixture(params=[None] + CI_VALUES, ids=lambda v: v or "defaults", scope="module")
def variant(request):
    return request.param, chart(request.param)


@pytest.mark.parametrize("version", VERSIONS)
def test_variant_validates_strictly(variant, version):
    name, docs = variant
    if name and name.startswith("dra") and _older(version, "1.34"):
        pytest.skip("DRA needs Kubernetes 1.34 or later")
    for doc in docs:
        key = (doc["apiVersion"], doc["kind"])
        if key in CRD_SCHEMAS:
            jsonschema.validate(doc, json.loads((SCHEMA_DIR / CRD_SCHEMAS[key]).read_text()))
            continue
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            path = ".".join(str(p) for p in error.path)
            pytest.fail(f"{name}: {_key(doc)} on {version}: {path}: {error.message}")


def test_variant_meets_the_policy(variant):
    name, docs = variant
    assert policy.violations(docs) == [], name


def _daemonset(docs):
    (ds,) = [d for d in docs if d["kind"] == "DaemonSet"]
    return ds


def _container(docs):
    return _daemonset(docs)["spec"]["template"]["spec"]["containers"][0]


def _config(docs):
    (cm,) = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "distarrayd-config"]
    return cm["data"]


def _gpu_term(docs):
    spec = _daemonset(docs)["spec"]["template"]["spec"]
    return spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"]


SHARED_GPUS = {"key": "nvidia.com/gpu.sharing-strategy", "operator": "NotIn",
               "values": ["time-slicing", "mps"]}


def test_every_node_term_refuses_shared_gpus(variant):
    """Terms are ORed: one without the exclusion would admit a time-sliced node by itself."""
    name, docs = variant
    spec = _daemonset(docs)["spec"]["template"]["spec"]
    if "affinity" not in spec:  # the host backend takes no GPU and no GPU node
        return
    for term in _gpu_term(docs):
        assert SHARED_GPUS in term["matchExpressions"], name


def test_dra_with_a_count_and_products():
    docs = chart("dra-count-values.yaml")
    (template,) = [d for d in docs if d["kind"] == "ResourceClaimTemplate"]
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"] == {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount",
                                  "count": 4}
    resources = _container(docs)["resources"]
    assert "nvidia.com/gpu" not in resources["limits"]
    assert resources["claims"] == [{"name": "gpus"}]
    terms = _gpu_term(docs)
    # With a product, only GPU Feature Discovery's nodes (which carry the product label) qualify.
    assert len(terms) == 1
    assert {"key": "nvidia.com/gpu.count", "operator": "Gt", "values": ["3"]} in terms[0]["matchExpressions"]
    assert {"key": "nvidia.com/gpu.product", "operator": "In",
            "values": ["NVIDIA-H100-80GB-HBM3"]} in terms[0]["matchExpressions"]
    assert _container(docs)["image"] == "distarrayd@sha256:" + "0" * 64


@pytest.mark.parametrize("values_file", ["dra-count-values.yaml", "single-gpu-values.yaml"])
def test_guaranteed_qos_sets_requests_to_limits(values_file):
    resources = _container(chart(values_file))["resources"]
    assert resources["requests"] == resources["limits"]
    burstable = _container(chart(values_file, guaranteedQoS=False))["resources"]
    assert burstable["requests"]["cpu"] != burstable["limits"]["cpu"]


def test_tenant_quotas_reach_the_daemon_flags():
    env = _config(chart("dra-count-values.yaml"))
    assert env["DISTARRAY_TENANT_MEMORY_QUOTA"] == "16GiB"
    assert env["DISTARRAY_TENANT_MEMORY_QUOTA_OVERRIDES"] == "batch=0"
    assert env["DISTARRAY_MAX_CONCURRENT_CALLS_PER_TENANT"] == "8"
    assert env["DISTARRAY_MAX_SESSIONS_PER_TENANT"] == "64"
    assert env["DISTARRAY_AUTH_TOKENS_FILE"] == "/etc/distarray/auth/tokens"
    assert "DISTARRAY_TLS_CERT_FILE" not in env


def test_host_backend_takes_no_gpu():
    docs = chart("host-values.yaml")
    spec = _daemonset(docs)["spec"]["template"]["spec"]
    assert "affinity" not in spec and "runtimeClassName" not in spec and "tolerations" not in spec
    assert spec["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert not [k for k in _container(docs)["resources"]["limits"] if "gpu" in k]
    assert _config(docs)["DISTARRAY_BACKEND"] == "host"
    kinds = {d["kind"] for d in docs}
    assert "ServiceMonitor" not in kinds and "PrometheusRule" not in kinds


def test_a_changed_flag_changes_the_pod_template():
    def digest(**values):
        return _daemonset(chart(**values))["spec"]["template"]["metadata"]["annotations"][CONFIG_HASH]
    assert digest() == digest()
    assert digest() != digest(daemonFlags={"log_format": "text"})
    assert digest() != digest(tls={"enabled": True})


@pytest.mark.parametrize("values", [
    {"gpus": {"count": "all"}},                  # the device plugin has no "all"
    {"gpus": {"count": 0}},
    {"gpus": {"source": "mig"}},
    {"gpu": {"count": 8}},                       # a misspelt key
    {"image": {"digest": "latest"}},
    {"tenants": {"memoryQuota": "16G"}},         # the daemon reads KiB/MiB/GiB/TiB
    {"resources": {"limits": {"cpu": "16", "memory": "64 GB"}}},
    {"daemonFlags": {"log_format": 1}},
])
def test_schema_refuses(values):
    with pytest.raises(jsonschema.ValidationError):
        helm_render.chart_values(CHART, values)


def test_chart_metadata():
    meta = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert meta["apiVersion"] == "v2" and meta["name"] == "distarray"
    # The image tag of the defaults is the chart's appVersion.
    assert yaml.safe_load((CHART / "values.yaml").read_text())["image"]["tag"] == meta["appVersion"]
    for template in (CHART / "templates").glob("*"):
        assert re.fullmatch(r"[a-z]+\.yaml", template.name), template.name


def test_every_config_key_is_a_daemon_flag(variant):
    """What the chart's values turn into DISTARRAY_* variables (tenant quotas, TLS, flags) are
    flags of the built daemon."""
    from test_distarrayd import _daemon_flags
    name, docs = variant
    flags = _daemon_flags()
    unknown = [k for k in _config(docs) if not k.startswith("DISTARRAY_")
               or k[len("DISTARRAY_"):].lower() not in flags]
    assert unknown == [], f"{name}: not flags of distarrayd: {unknown}"
