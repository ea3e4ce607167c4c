"""Every rendered object validates against the Kubernetes schemas (kubernetes-validate, strict:
unknown fields fail) of each supported version. The Prometheus Operator's kinds are custom
resources with no schema in kubernetes-validate: they are checked against crd_schemas/, written
from the operator's CRDs for the fields we use, with unknown fields rejected the same way."""

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
}
SCHEMA_DIR = pathlib.Path(__file__).parent / "crd_schemas"


def _older(version, since):
    return tuple(map(int, version.split("."))) < tuple(map(int, since.split(".")))


@pytest.mark.parametrize("version", VERSIONS)
def test_builtin_kinds_validate_strictly(overlay, version):
    name, docs = overlay
    if _older(version, SINCE.get(name, VERSIONS[0])):
        pytest.skip(f"{name} needs Kubernetes {SINCE[name]} or later")
    checked = 0
    for doc in docs:
        if (doc["apiVersion"], doc["kind"]) in CRD_SCHEMAS:
            continue
        label = f"{name}: {doc['kind']}/{doc['metadata']['name']} on {version}"
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.SchemaNotFoundError:
            pytest.fail(f"{label}: no schema; a custom resource needs an entry in CRD_SCHEMAS")
        except kubernetes_validate.ValidationError as error:
            path = ".".join(str(p) for p in error.path)
            pytest.fail(f"{label}: {path}: {error.message}")
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
