"""The distarrayd manifests say what docs/operations.md says they do: GPU count from the
parameter, node selection, probes on the health port, ports, flags the daemon knows, the
Service, ServiceMonitor and NetworkPolicy pointing at the right things, and TLS material where
the daemon's flags look for it. The daemon runs as the DaemonSet distarrayd, or in cluster-lws
as the LeaderWorkerSet distarrayd-cluster whose one pod template the leader and the members
share; the checks of the pod hold for either (test_cluster_lws.py adds the cluster's own)."""

import os
import pathlib
import subprocess

import pytest

import lws_pods
import render
from conftest import rendered

# None: the GPUs come from a DRA ResourceClaim (all of the node's), not an nvidia.com/gpu count.
GPU_COUNT = {"single-gpu": 1, "multi-gpu": 8, "with-tls": 8, "dra": None, "cluster-lws": 8}
PORTS = {"grpc": 50051, "health": 8081, "metrics": 9464}
# Overlays whose daemons form one cluster (docs/cluster.md), and the port between them.
CLUSTERS = {"cluster-lws"}
CLUSTER_PORT = 50061
# Labels the LeaderWorkerSet controller gives its pods: the set's name, and the pod's index in
# its group, 0 for the leader.
LWS_NAME = lws_pods.SET_NAME
LWS_WORKER_INDEX = lws_pods.WORKER_INDEX
DAEMON = pathlib.Path(os.environ.get("BUILD_DIR", render.REPO / "build")) / "server" / "distarrayd"


def find(docs, kind, name=None):
    found = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert found, f"no {kind} {name or ''} rendered"
    return found[0]


def workload(docs):
    """The daemon's workload: the DaemonSet distarrayd, or the LeaderWorkerSet of a cluster."""
    found = [d for d in docs if (d["kind"], d["metadata"]["name"]) in
             {("DaemonSet", "distarrayd"), ("LeaderWorkerSet", "distarrayd-cluster")}]
    assert len(found) == 1, [(d["kind"], d["metadata"]["name"]) for d in found]
    return found[0]


def template(docs):
    """The daemon's pod template. A LeaderWorkerSet's leader runs its worker template when it has
    no leaderTemplate: one template, so leader and members cannot drift apart."""
    doc = workload(docs)
    if doc["kind"] == "LeaderWorkerSet":
        assert "leaderTemplate" not in doc["spec"]["leaderWorkerTemplate"]
        return doc["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    return doc["spec"]["template"]


def pod(docs):
    return template(docs)["spec"]


def leader_labels(docs):
    """The labels of the pod that serves clients: every pod of a DaemonSet; in a
    LeaderWorkerSet, the template's plus those the controller adds to the leader."""
    labels = dict(template(docs)["metadata"]["labels"])
    doc = workload(docs)
    if doc["kind"] == "LeaderWorkerSet":
        labels.update({LWS_NAME: doc["metadata"]["name"], LWS_WORKER_INDEX: "0"})
    return labels


def container(docs):
    containers = pod(docs)["containers"]
    assert [c["name"] for c in containers] == ["distarrayd"]
    return containers[0]


def config(docs):
    refs = [e["configMapRef"]["name"] for e in container(docs).get("envFrom", [])]
    assert len(refs) == 1
    return find(docs, "ConfigMap", refs[0])["data"]


def test_overlays_are_the_documented_ones():
    assert set(render.OVERLAYS) == set(GPU_COUNT)


def test_gpu_count_comes_from_the_overlay(overlay):
    name, docs = overlay
    resources = container(docs)["resources"]
    if GPU_COUNT[name] is None:
        assert "nvidia.com/gpu" not in resources["requests"]
        assert "nvidia.com/gpu" not in resources["limits"]
        claims = pod(docs)["resourceClaims"]
        assert claims == [{"name": "gpus", "resourceClaimTemplateName": "distarrayd-gpus"}]
        assert resources["claims"] == [{"name": "gpus"}]
        template = find(docs, "ResourceClaimTemplate", "distarrayd-gpus")
        (request,) = template["spec"]["spec"]["devices"]["requests"]
        assert request["exactly"] == {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All"}
        return
    want = str(GPU_COUNT[name])
    assert resources["requests"]["nvidia.com/gpu"] == want
    assert resources["limits"]["nvidia.com/gpu"] == want


def test_every_node_term_refuses_shared_gpus(overlay):
    """GPU Feature Discovery labels time-sliced and MPS nodes; the daemon wants whole GPUs. Terms
    are ORed, so every one carries the exclusion."""
    name, docs = overlay
    terms = pod(docs)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"]
    assert terms
    for term in terms:
        assert {"key": "nvidia.com/gpu.sharing-strategy", "operator": "NotIn",
                "values": ["time-slicing", "mps"]} in term["matchExpressions"], name


def test_gpu_count_is_a_parameter(tmp_path):
    """A new overlay sets another count by the parameter alone (no patch of the DaemonSet)."""
    k8s = os.path.relpath(render.K8S, tmp_path)  # kustomize takes no absolute paths
    (tmp_path / "kustomization.yaml").write_text(f"""
resources: [{k8s}/base]
configMapGenerator:
  - name: distarrayd-params
    behavior: merge
    literals: [gpu-count=3, node-gpu-count-above=2, prometheus-release=custom,
               prometheus-namespace=observability]
components: [{k8s}/components/parameters]
""")
    docs = render.render(tmp_path)
    assert container(docs)["resources"]["limits"]["nvidia.com/gpu"] == "3"
    assert container(docs)["resources"]["requests"]["nvidia.com/gpu"] == "3"
    assert _gpu_count_above(docs) == 2
    assert find(docs, "ServiceMonitor")["metadata"]["labels"]["release"] == "custom"
    policy = find(docs, "NetworkPolicy", "distarrayd")
    selectors = [peer["namespaceSelector"]["matchLabels"] for rule in policy["spec"]["ingress"]
                 for peer in rule["from"]]
    assert {"kubernetes.io/metadata.name": "observability"} in selectors
    assert not [d for d in docs if d["metadata"]["name"] == "distarrayd-params"], "local-config leaked"


def _terms(docs):
    return pod(docs)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"]


def _gpu_count_above(docs):
    (count,) = [e for e in _terms(docs)[0]["matchExpressions"] if e["key"] == "nvidia.com/gpu.count"]
    assert count["operator"] == "Gt"
    (value,) = count["values"]
    return int(value)


def test_node_selection_works_with_the_device_plugin_alone(overlay):
    _, docs = overlay
    spec = pod(docs)
    assert "nodeSelector" not in spec
    keys = [[e["key"] for e in term["matchExpressions"]] for term in _terms(docs)]
    # Terms are ORed, expressions inside a term ANDed: GPU Feature Discovery's nodes must also
    # have enough GPUs; the other two labels admit a node alone; every term keeps off shared GPUs
    # (an absent sharing-strategy label passes NotIn, so a device-plugin-only node still does).
    shared = "nvidia.com/gpu.sharing-strategy"
    assert keys == [["nvidia.com/gpu.present", "nvidia.com/gpu.count", shared],
                    ["feature.node.kubernetes.io/pci-10de.present", shared],
                    ["distarray.io/gpu-node", shared]]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]


def test_node_gpu_count_admits_exactly_the_nodes_with_enough_gpus(overlay):
    """Gt is strict: the parameter is the GPU count less one, so a node of exactly gpu-count GPUs
    is admitted and one fewer is not. A DRA claim of all GPUs needs any GPU node."""
    name, docs = overlay
    want = GPU_COUNT[name] if GPU_COUNT[name] is not None else 1
    assert _gpu_count_above(docs) == want - 1


def test_runtime_class_and_device_plugin_per_overlay(overlay):
    name, docs = overlay
    # The DRA driver hands devices over through CDI: no runtime class needed.
    assert pod(docs).get("runtimeClassName") == (
        None if name in ("single-gpu", "dra") else "nvidia")
    plugins = [d for d in docs if d["kind"] == "DaemonSet" and d is not workload(docs)]
    assert [d["metadata"]["name"] for d in plugins] == (
        ["nvidia-device-plugin-daemonset"] if name == "single-gpu" else [])


def test_probes_use_the_health_services(overlay):
    name, docs = overlay
    c = container(docs)
    want = PORTS | ({"cluster": CLUSTER_PORT} if name in CLUSTERS else {})
    assert {p["name"]: p["containerPort"] for p in c["ports"]} == want
    assert c["startupProbe"]["grpc"] == {"port": 8081, "service": "readiness"}
    assert c["readinessProbe"]["grpc"] == {"port": 8081, "service": "readiness"}
    assert c["livenessProbe"]["grpc"] == {"port": 8081, "service": "liveness"}


def test_volumes_for_nccl_and_a_read_only_root(overlay):
    _, docs = overlay
    volumes = {v["name"]: v for v in pod(docs)["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in container(docs)["volumeMounts"]}
    assert volumes[mounts["/dev/shm"]]["emptyDir"]["medium"] == "Memory"
    assert "sizeLimit" in volumes[mounts["/dev/shm"]]["emptyDir"]
    assert "emptyDir" in volumes[mounts["/tmp"]]
    assert container(docs)["securityContext"]["readOnlyRootFilesystem"] is True


def test_priority_class(overlay):
    _, docs = overlay
    klass = find(docs, "PriorityClass", pod(docs)["priorityClassName"])
    assert 0 < klass["value"] < 2_000_000_000  # below system-cluster-critical
    assert klass.get("globalDefault") is False


def test_config_addresses_match_the_ports(overlay):
    _, docs = overlay
    env = config(docs)
    assert env["DISTARRAY_LISTEN"] == f"0.0.0.0:{PORTS['grpc']}"
    assert env["DISTARRAY_HEALTH_LISTEN"] == f"0.0.0.0:{PORTS['health']}"
    assert env["DISTARRAY_METRICS_LISTEN"] == f"0.0.0.0:{PORTS['metrics']}"
    # Readiness off for the grace, calls finish in the drain time, exit at most 1 s later: all
    # before the kubelet's SIGKILL.
    drain = int(env["DISTARRAY_DRAIN_GRACE_SECONDS"]) + int(env["DISTARRAY_DRAIN_SECONDS"]) + 1
    assert pod(docs)["terminationGracePeriodSeconds"] > drain
    assert "args" not in container(docs), "a flag in args would silently win over the ConfigMap"


def _daemon_flags():
    if not DAEMON.exists():
        pytest.fail(f"{DAEMON} is not built (scripts/build.sh)")
    help_text = subprocess.run([str(DAEMON), "--helpfull"], capture_output=True, text=True,
                               check=False).stdout
    help_text += subprocess.run([str(DAEMON), "--helpfull"], capture_output=True, text=True,
                                check=False).stderr
    return {word[2:].split("=")[0] for word in help_text.split() if word.startswith("--")}


def test_every_config_key_is_a_daemon_flag(overlay):
    name, docs = overlay
    flags = _daemon_flags()
    if "health_listen" not in flags:
        pytest.skip(f"{DAEMON} predates --health_listen and DISTARRAY_* variables: rebuild it")
    security = {"tls_cert_file", "tls_key_file", "tls_client_ca_file", "auth_tokens_file"}
    if name == "with-tls" and not security & flags:
        pytest.skip(f"{DAEMON} has no TLS or token flags yet: with-tls's keys are unchecked")
    unknown = [k for k in config(docs) if not k.startswith("DISTARRAY_")
               or k[len("DISTARRAY_"):].lower() not in flags]
    assert unknown == [], f"{name}: not flags of distarrayd: {unknown}"


def test_service_and_service_monitor_reach_the_pods(overlay):
    name, docs = overlay
    labels = leader_labels(docs)
    service = find(docs, "Service", "distarrayd")
    assert service["spec"]["selector"].items() <= labels.items()
    # A per-node daemon serves its own node's clients; a cluster's leader serves every node's.
    assert service["spec"]["internalTrafficPolicy"] == ("Cluster" if name in CLUSTERS else "Local")
    port_names = {p["name"] for p in container(docs)["ports"]}
    service_ports = {p["name"]: p for p in service["spec"]["ports"]}
    assert set(service_ports) == {"grpc", "metrics"}, "the health port stays off the Service"
    for port in service_ports.values():
        assert port["targetPort"] in port_names
    monitor = find(docs, "ServiceMonitor", "distarrayd")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == ["metrics"]
    release = monitor["metadata"]["labels"]["release"]
    assert release == ("prometheus" if name == "single-gpu" else "kube-prometheus-stack")
    for rule in [d for d in docs if d["kind"] == "PrometheusRule"]:
        assert rule["metadata"]["labels"]["release"] == release, "rules and monitor differ"


def test_network_policy_admits_only_clients_and_prometheus(overlay):
    _, docs = overlay
    policy = find(docs, "NetworkPolicy", "distarrayd")["spec"]
    labels = leader_labels(docs)
    assert policy["podSelector"]["matchLabels"].items() <= labels.items()
    assert policy["policyTypes"] == ["Ingress"]
    admitted = {}
    for rule in policy["ingress"]:
        assert rule.get("from"), "a rule without `from` admits every source"
        assert rule.get("ports"), "a rule without `ports` admits every port"
        for port in rule["ports"]:
            admitted[port["port"]] = rule["from"]
    assert set(admitted) == {PORTS["grpc"], PORTS["metrics"]}
    assert admitted[PORTS["grpc"]] == [
        {"namespaceSelector": {"matchLabels": {"distarray.io/client": "true"}}}]
    (prometheus,) = admitted[PORTS["metrics"]]
    assert prometheus["podSelector"] == {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}
    assert "kubernetes.io/metadata.name" in prometheus["namespaceSelector"]["matchLabels"]


def test_namespaces(overlay):
    _, docs = overlay
    for doc in docs:
        if doc["kind"] in ("Namespace", "PriorityClass"):
            continue
        want = "kube-system" if doc["metadata"]["name"].startswith("nvidia-device-plugin") else "distarray"
        assert doc["metadata"].get("namespace") == want, doc["metadata"]["name"]
    namespace = find(docs, "Namespace", "distarray")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_tls_material_where_the_flags_look(overlay):
    name, docs = overlay
    env = config(docs)
    tls_keys = {"DISTARRAY_TLS_CERT_FILE", "DISTARRAY_TLS_KEY_FILE", "DISTARRAY_TLS_CLIENT_CA_FILE",
                "DISTARRAY_AUTH_TOKENS_FILE"}
    if name != "with-tls":
        assert not tls_keys & set(env)
        return
    volumes = {v["name"]: v for v in pod(docs)["volumes"]}
    files = {}
    for mount in container(docs)["volumeMounts"]:
        assert "subPath" not in mount, "a subPath mount never sees a rotated Secret"
        secret = volumes[mount["name"]].get("secret")
        if secret:
            assert mount.get("readOnly") is True
            for item in secret["items"]:
                files[f"{mount['mountPath']}/{item['path']}"] = (secret["secretName"], item["key"])
    assert files == {
        "/etc/distarray/tls/tls.crt": ("distarrayd-tls", "tls.crt"),
        "/etc/distarray/tls/tls.key": ("distarrayd-tls", "tls.key"),
        "/etc/distarray/tls/ca.crt": ("distarrayd-tls", "ca.crt"),
        "/etc/distarray/auth/tokens": ("distarrayd-auth-tokens", "tokens"),
    }
    for key in tls_keys:
        assert env[key] in files, key
    assert pod(docs)["securityContext"]["fsGroup"] == 65532  # reads the 0440 secret files
