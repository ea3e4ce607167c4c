"""The cluster-lws overlay runs the daemons of one cluster (docs/cluster.md) as a LeaderWorkerSet
and wires what the cluster needs: the group recreated on any restart, members started before
the leader is ready, the per-node daemon's pod template with this node's address (POD_IP) and
the cluster port added, clients sent to the leader only, and the daemons' own traffic (the
cluster service and Gloo's ephemeral ports) admitted from the group's pods and no one else.
test_distarrayd.py, test_policy.py and test_schemas.py check its pod like every overlay's."""

import copy
import shutil

import yaml

import lws_pods
import policy
import render
from conftest import rendered
from test_distarrayd import (CLUSTER_PORT, LWS_NAME, LWS_WORKER_INDEX, config, container, find,
                             leader_labels, template)

OVERLAY = "cluster-lws"


def _docs():
    return rendered(OVERLAY)


def _lws(docs):
    return find(docs, "LeaderWorkerSet", "distarrayd-cluster")


def _member_labels(docs, index=1):
    return leader_labels(docs) | {LWS_WORKER_INDEX: str(index)}


def _selects(selector, labels):
    return selector["matchLabels"].items() <= labels.items()


def test_group_is_recreated_whole_and_members_start_first():
    """The leader's loss ends the cluster and a restarted member comes back empty: any restart
    recreates the group. The leader is not ready until its members join, so the members must be
    created without waiting for it (LeaderReady would never create them)."""
    spec = _lws(_docs())["spec"]
    assert spec["leaderWorkerTemplate"]["restartPolicy"] == "RecreateGroupOnPodRestart"
    assert spec["startupPolicy"] == "LeaderCreated"
    assert spec["leaderWorkerTemplate"]["size"] == 2
    assert spec["replicas"] == 1, "one device space behind the clients' Service"


def test_the_daemonset_is_replaced_by_the_template_it_had():
    """The group's pods run multi-gpu's DaemonSet template, with only the cluster's additions."""
    docs = _docs()
    assert not [d for d in docs if d["kind"] == "DaemonSet"]
    assert "leaderTemplate" not in _lws(docs)["spec"]["leaderWorkerTemplate"]
    multi = copy.deepcopy(find(rendered("multi-gpu"), "DaemonSet", "distarrayd")["spec"]["template"])
    ours = copy.deepcopy(template(docs))
    added = ours["spec"]["containers"][0]
    assert added.pop("env") == [{"name": "POD_IP",
                                 "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
    assert added["ports"].pop() == {"name": "cluster", "containerPort": CLUSTER_PORT,
                                    "protocol": "TCP"}
    assert added["startupProbe"].pop("failureThreshold") > (
        multi["spec"]["containers"][0]["startupProbe"].pop("failureThreshold"))
    assert ours["spec"]["affinity"].pop("podAntiAffinity")
    # The flags ConfigMap differs (the cluster's flags): its hashed name is followed.
    refs = [c["envFrom"][0]["configMapRef"] for c in (added, multi["spec"]["containers"][0])]
    assert refs[0]["name"] != refs[1]["name"]
    refs[0]["name"] = refs[1]["name"]
    assert ours == multi


def test_template_names_the_generated_config_map():
    """kustomize knows no LeaderWorkerSet: components/leaderworkerset tells it where the template
    names ConfigMaps, or the pod would ask for one without the generated hash suffix."""
    docs = _docs()
    (ref,) = container(docs)["envFrom"]
    name = ref["configMapRef"]["name"]
    assert name.startswith("distarrayd-config-")
    assert find(docs, "ConfigMap", name)


def test_pod_ip_gives_the_cluster_address():
    """--cluster_listen is all interfaces, so the daemon advertises $POD_IP; size, rank and the
    leader come from LeaderWorkerSet's variables, different in each pod, so the shared ConfigMap
    must not pin them."""
    docs = _docs()
    env = {e["name"]: e for e in container(docs)["env"]}
    assert env["POD_IP"] == {"name": "POD_IP",
                             "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
    flags = config(docs)
    assert flags["DISTARRAY_CLUSTER_LISTEN"] == f"0.0.0.0:{CLUSTER_PORT}"
    for per_pod in ("SIZE", "RANK", "LEADER", "ADDRESS"):
        assert f"DISTARRAY_CLUSTER_{per_pod}" not in flags
        assert f"DISTARRAY_CLUSTER_{per_pod}" not in env
    ports = {p["name"]: p["containerPort"] for p in container(docs)["ports"]}
    assert ports["cluster"] == CLUSTER_PORT


def test_startup_outlasts_devices_and_formation():
    """A group that does not form ends with the daemon's exit 5 after the formation timeout, not
    with the kubelet killing it first: the startup probe allows the base's time for the devices
    plus the formation timeout."""
    docs = _docs()
    probe = container(docs)["startupProbe"]
    base = find(rendered("multi-gpu"), "DaemonSet", "distarrayd")["spec"]["template"]["spec"][
        "containers"][0]["startupProbe"]
    form = int(config(docs)["DISTARRAY_CLUSTER_FORM_TIMEOUT_SECONDS"])
    assert probe["periodSeconds"] * probe["failureThreshold"] >= (
        base["periodSeconds"] * base["failureThreshold"] + form)


def test_one_daemon_per_node():
    (term,) = template(_docs())["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]
    assert term == {"labelSelector": {"matchLabels": {LWS_NAME: "distarrayd-cluster"}},
                    "topologyKey": "kubernetes.io/hostname"}


def test_client_service_selects_only_the_leader():
    docs = _docs()
    service = find(docs, "Service", "distarrayd")
    selector = service["spec"]["selector"]
    assert selector[LWS_NAME] == _lws(docs)["metadata"]["name"]
    assert selector[LWS_WORKER_INDEX] == "0"
    assert selector.items() <= leader_labels(docs).items()
    for index in (1, 2, 7):
        assert not selector.items() <= _member_labels(docs, index).items()
    assert CLUSTER_PORT not in {p["port"] for p in service["spec"]["ports"]}, \
        "the cluster service is for the daemons only"
    assert service["spec"]["internalTrafficPolicy"] == "Cluster"


def test_no_service_takes_the_sets_name():
    """The controller creates a headless Service named after the set, which LWS_LEADER_ADDRESS
    (<set>-0.<set>.<namespace>) resolves through; one of ours by that name would stop it."""
    docs = _docs()
    name = _lws(docs)["metadata"]["name"]
    assert not [d for d in docs if d["kind"] == "Service" and d["metadata"]["name"] == name]


def test_network_policy_admits_the_group_on_every_tcp_port():
    """Gloo listens on ephemeral ports: the group's pods reach each other on any TCP port, and
    only they do. A peer of podSelector alone is the policy's own namespace."""
    docs = _docs()
    policy = find(docs, "NetworkPolicy", "distarrayd-cluster")["spec"]
    group = {"matchLabels": {LWS_NAME: "distarrayd-cluster"}}
    assert policy["podSelector"] == group
    assert policy["policyTypes"] == ["Ingress"]
    (rule,) = policy["ingress"]
    assert rule["from"] == [{"podSelector": group}]
    assert rule["ports"] == [{"protocol": "TCP"}], "every TCP port, for Gloo's ephemeral ones"
    assert _selects(policy["podSelector"], leader_labels(docs))
    assert _selects(policy["podSelector"], _member_labels(docs))


def test_members_admit_only_the_group_and_the_leader_keeps_its_clients():
    """The clients' and Prometheus's rules select the leader alone; a member is selected by the
    group's policy only."""
    docs = _docs()
    policies = {d["metadata"]["name"]: d["spec"] for d in docs if d["kind"] == "NetworkPolicy"}
    on_leader = {n for n, p in policies.items() if _selects(p["podSelector"], leader_labels(docs))}
    on_member = {n for n, p in policies.items() if _selects(p["podSelector"], _member_labels(docs))}
    assert on_leader == {"distarrayd", "distarrayd-cluster"}
    assert on_member == {"distarrayd-cluster"}
    client_ports = {port["port"] for rule in policies["distarrayd"]["ingress"]
                    for port in rule["ports"]}
    assert client_ports == {50051, 9464}


def test_gpu_count_is_copied_before_the_template(tmp_path):
    """Changing gpu-count in the overlay reaches the group's pods: components/parameters runs
    before the template is copied out of the DaemonSet."""
    shutil.copytree(render.REPO / "deploy", tmp_path / "deploy")
    overlay = tmp_path / "deploy" / "k8s" / "overlays" / OVERLAY
    kustomization = yaml.safe_load((overlay / "kustomization.yaml").read_text())
    (params,) = [g for g in kustomization["configMapGenerator"] if g["name"] == "distarrayd-params"]
    params["literals"] = ["gpu-count=4", "node-gpu-count-above=3"]
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    docs = render.render(overlay)
    resources = container(docs)["resources"]
    assert resources["requests"]["nvidia.com/gpu"] == resources["limits"]["nvidia.com/gpu"] == "4"
    (count,) = [e for e in template(docs)["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchExpressions"]
        if e["key"] == "nvidia.com/gpu.count"]
    assert count["values"] == ["3"]
    assert not [d for d in docs if d["kind"] == "DaemonSet"]


def test_checkov_gets_the_pods_the_controller_creates():
    """checkov knows no LeaderWorkerSet: scripts/check-deploy.sh gives it the leader and a member
    as the controller creates them (labels, the set's skips), next to the policies that select
    them, so its pod checks and its NetworkPolicy check cover the group."""
    docs = _docs()
    leader, member = lws_pods.pods(docs)
    assert (leader["metadata"]["name"], member["metadata"]["name"]) == (
        "distarrayd-cluster-0", "distarrayd-cluster-0-1")
    group = {lws_pods.GROUP_INDEX: "0"}
    assert leader["metadata"]["labels"] == leader_labels(docs) | group
    assert member["metadata"]["labels"] == _member_labels(docs) | group
    assert leader["spec"] == member["spec"] == template(docs)["spec"]
    assert leader["metadata"]["annotations"] == _lws(docs)["metadata"]["annotations"]
    assert leader["metadata"]["namespace"] == member["metadata"]["namespace"] == "distarray"
    assert policy.violations([leader, member]) == []
    assert lws_pods.pods(rendered("multi-gpu")) == []
