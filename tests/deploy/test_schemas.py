"""Every rendered object validates against the Kubernetes schemas (kubernetes-validate, strict:
unknown fields fail) of each supported version. The Prometheus Operator's kinds are custom
resources with no schema in kubernetes-validate: they are checked against crd_schemas/, written
from the operator's CRDs for the fields we use, with unknown fields rejected the same way."""

import json
import pathlib

import jsonschema
import kubernetes_validate
import pytest

VERSIONS = ["1.29", "1.30", "1.31", "1.32", "1.33"]
CRD_SCHEMAS = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): "servicemonitor.json",
    ("monitoring.coreos.com/v1", "PrometheusRule"): "prometheusrule.json",
}
SCHEMA_DIR = pathlib.Path(__file__).parent / "crd_schemas"


@pytest.mark.parametrize("version", VERSIONS)
def test_builtin_kinds_validate_strictly(overlay, version):
    name, docs = overlay
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
