"""Every rendered object validates against the Kubernetes schemas (kubernetes-validate, strict:
unknown fields fail) of each supported version. The Prometheus Operator's kinds and
LeaderWorkerSet are custom resources with no schema in kubernetes-validate: they are checked
against crd_schemas/, written from their CRDs for the fields we use, with unknown fields
rejected the same way. A LeaderWorkerSet's CRD embeds Kubernetes' own PodTemplateSpec: its pod
templates are validated by kubernetes-validate as v1 PodTemplates, on every version."""

import copy
import json
import pathlib

import jsonschema
import kubernetes_validate
import pytest

VERSIONS = ["1.29", "1.30", "1.31", "1.32", "1.33", "1.34", "1.35", "1.36", "1.37"]
# Overlays that need a newer Kubernetes than the oldest above: dra uses resource.k8s.io/v1 and the
# pod's resourceClaims as stable from 1.34 (Dynamic Resource Allocation), so it is checked from
# there on (docs/operations.md says it needs 1.34).
SINCE = {"dra": "1.34"}
CRD_SCHEMAS = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): "servicemonitor.json",
    ("monitoring.coreos.com/v1", "PrometheusRule"): "prometheusrule.json",
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"): "leaderworkerset.json",
}
SCHEMA_DIR = pathlib.Path(__file__).parent / "crd_schemas"


def _older(version, since):
    return tuple(map(int, version.split("."))) < tuple(map(int, since.split(".")))


def embedded_pod_templates(doc):
    """A custom resource's pod templates as v1 PodTemplate objects, for kubernetes-validate."""
    if (doc["apiVersion"], doc["kind"]) != ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"):
        return []
    templates = doc["spec"]["leaderWorkerTemplate"]
    return [{"apiVersion": "v1", "kind": "PodTemplate",
             "metadata": {"name": f"{doc['metadata']['name']}-{key}",
                          "namespace": doc["metadata"].get("namespace", "default")},
             "template": templates[key]}
            for key in ("leaderTemplate", "workerTemplate") if key in templates]


def _validate(doc, version, label):
    try:
        kubernetes_validate.validate(doc, version, strict=True)
    except kubernetes_validate.SchemaNotFoundError:
        pytest.fail(f"{label}: no schema; a custom resource needs an entry in CRD_SCHEMAS")
    except kubernetes_validate.ValidationError as error:
        path = ".".join(str(p) for p in error.path)
        pytest.fail(f"{label}: {path}: {error.message}")


@pytest.mark.parametrize("version", VERSIONS)
def test_builtin_kinds_validate_strictly(overlay, version):
    name, docs = overlay
    if _older(version, SINCE.get(name, VERSIONS[0])):
        pytest.skip(f"{name} needs Kubernetes {SINCE[name]} or later")
    checked = 0
    for doc in docs:
        if (doc["apiVersion"], doc["kind"]) in CRD_SCHEMAS:
            for template in embedded_pod_templates(doc):
                _validate(template, version, f"{name}: {doc['kind']}/{doc['metadata']['name']} "
                                             f"{template['metadata']['name']} on {version}")
                checked += 1
            continue
        _validate(doc, version, f"{name}: {doc['kind']}/{doc['metadata']['name']} on {version}")
        checked += 1
    assert checked >= 8, f"{name}: only {checked} objects validated"


def test_dra_claim_template_is_v1_and_strictly_checked():
    """The DRA overlay's template is resource.k8s.io/v1 (whose requests nest under `exactly`):
    the v1beta1 shape, deviceClassName directly in the request, must fail the 1.34 schema."""
    from conftest import rendered
    (template,) = [d for d in rendered("dra") if d["kind"] == "ResourceClaimTemplate"]
    assert template["apiVersion"] == "resource.k8s.io/v1"
    kubernetes_validate.validate(template, "1.34", strict=True)
    request = template["spec"]["spec"]["devices"]["requests"][0]
    request.update(request.pop("exactly"))
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(template, "1.34", strict=True)


def test_custom_resources_validate(overlay):
    name, docs = overlay
    seen = set()
    for doc in docs:
        key = (doc["apiVersion"], doc["kind"])
        if key not in CRD_SCHEMAS:
            continue
        schema = json.loads((SCHEMA_DIR / CRD_SCHEMAS[key]).read_text())
        jsonschema.validate(doc, schema)
        seen.add(doc["kind"])
    assert "ServiceMonitor" in seen, name


@pytest.mark.parametrize("field,value", [
    (("spec", "endpoints", 0, "prot"), "metrics"),          # a misspelt field
    (("spec", "endpoints", 0, "interval"), "15 seconds"),  # not a Prometheus duration
    (("metadata", "labels", "release"), 3),                # a label that is not a string
])
def test_crd_schema_rejects(field, value):
    schema = json.loads((SCHEMA_DIR / "servicemonitor.json").read_text())
    doc = {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
           "metadata": {"name": "x", "labels": {"release": "p"}},
           "spec": {"selector": {"matchLabels": {"a": "b"}},
                    "endpoints": [{"port": "metrics", "interval": "15s"}]}}
    jsonschema.validate(doc, schema)
    node = doc
    for key in field[:-1]:
        node = node[key]
    node[field[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, schema)


def _leaderworkerset():
    from conftest import rendered
    (doc,) = [d for d in rendered("cluster-lws") if d["kind"] == "LeaderWorkerSet"]
    return copy.deepcopy(doc)


LWT = ("spec", "leaderWorkerTemplate")


@pytest.mark.parametrize("field,value", [
    (LWT + ("restartPolicy",), "RecreateGroup"),                      # not a policy
    (LWT + ("size",), "2"),                                           # a string
    (LWT + ("size",), 0),                                             # not even a leader
    (LWT + ("sise",), 2),                                             # a misspelt field
    (LWT + ("workerTemplate", "metadata", "labels", "tier"), 1),      # a label that is not a string
    (LWT + ("workerTemplate", "spek"), {}),                           # a misspelt template field
    (("spec", "startupPolicy"), "LeaderStarted"),                     # not a policy
    (("spec", "networkConfig"), {"subdomainPolicy": "PerGroup"}),     # not a policy
], ids=lambda v: ".".join(map(str, v)) if isinstance(v, tuple) else None)
def test_leaderworkerset_schema_rejects(field, value):
    schema = json.loads((SCHEMA_DIR / "leaderworkerset.json").read_text())
    doc = _leaderworkerset()
    jsonschema.validate(doc, schema)
    node = doc
    for key in field[:-1]:
        node = node[key]
    node[field[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, schema)


def test_leaderworkerset_schema_needs_the_worker_template():
    schema = json.loads((SCHEMA_DIR / "leaderworkerset.json").read_text())
    doc = _leaderworkerset()
    del doc["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, schema)


@pytest.mark.parametrize("template", ["workerTemplate", "leaderTemplate"])
def test_leaderworkerset_pod_templates_are_strictly_checked(template):
    """The CRD schema leaves the templates' pod spec to kubernetes-validate: a misspelt pod field,
    in the workers' template or a leader's, fails there."""
    doc = _leaderworkerset()
    templates = doc["spec"]["leaderWorkerTemplate"]
    templates.setdefault("leaderTemplate", copy.deepcopy(templates["workerTemplate"]))
    wrapped = {t["metadata"]["name"]: t for t in embedded_pod_templates(doc)}
    assert set(wrapped) == {"distarrayd-cluster-leaderTemplate", "distarrayd-cluster-workerTemplate"}
    for t in wrapped.values():
        kubernetes_validate.validate(t, VERSIONS[-1], strict=True)
    templates[template]["spec"]["containers"][0]["securityContxt"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(wrapped[f"distarrayd-cluster-{template}"], VERSIONS[-1],
                                     strict=True)
