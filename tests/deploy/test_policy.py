"""The policy holds for every rendered overlay, and the policy check itself catches breaches."""

import copy

import pytest

import policy
from conftest import rendered


def test_overlay_meets_the_policy(overlay):
    name, docs = overlay
    assert policy.violations(docs) == [], f"overlay {name}"


def test_every_overlay_renders_the_daemon(overlay):
    """One workload runs the daemon: the per-node DaemonSet, or a cluster's LeaderWorkerSet
    (whose pod templates the policy checks like any other)."""
    name, docs = overlay
    daemons = [(d["kind"], d["metadata"]["name"]) for d in docs
               if (d["kind"], d["metadata"]["name"]) in
               {("DaemonSet", "distarrayd"), ("LeaderWorkerSet", "distarrayd-cluster")}]
    assert len(daemons) == 1, (name, daemons)


def test_each_exception_is_still_needed():
    """An exception whose workload is gone, or whose rule no longer fires, is dropped."""
    docs = [d for name in ("single-gpu", "multi-gpu", "with-tls") for d in rendered(name)]
    fired = set()
    for doc in docs:
        for template in policy.pod_templates(doc):
            key = (doc["kind"], doc["metadata"]["name"])
            fired.update((key, rule) for rule, _ in policy.pod_violations(template["spec"]))
    for key, rules in policy.EXCEPTIONS.items():
        for rule, reason in rules.items():
            assert reason.strip(), f"{key} {rule}: an exception needs its reason"
            assert (key, rule) in fired, f"{key} {rule}: exception no longer needed"


def _daemonset():
    return copy.deepcopy(next(d for d in rendered("multi-gpu")
                              if (d["kind"], d["metadata"]["name"]) == ("DaemonSet", "distarrayd")))


def _container(doc):
    return doc["spec"]["template"]["spec"]["containers"][0]


def _unset(path):
    def mutate(doc):
        node = doc
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]
    return mutate


def _set(path, value):
    def mutate(doc):
        node = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return mutate


POD = ("spec", "template", "spec")
CONTAINER = POD + ("containers", 0)
BREACHES = {
    "cpu-limit-missing": (_unset(CONTAINER + ("resources", "limits", "cpu")), "resources"),
    "memory-request-missing": (_unset(CONTAINER + ("resources", "requests", "memory")), "resources"),
    "no-liveness-probe": (_unset(CONTAINER + ("livenessProbe",)), "probes"),
    "no-readiness-probe": (_unset(CONTAINER + ("readinessProbe",)), "probes"),
    "named-probe-port": (_set(CONTAINER + ("readinessProbe", "grpc", "port"), "health"), "probe-ports"),
    "probe-port-not-declared": (_set(CONTAINER + ("livenessProbe", "grpc", "port"), 9999), "probe-ports"),
    "root-allowed": (_set(CONTAINER + ("securityContext", "runAsNonRoot"), False), "run-as-non-root"),
    "uid-0": (_set(CONTAINER + ("securityContext", "runAsUser"), 0), "run-as-non-root"),
    "writable-root": (_unset(CONTAINER + ("securityContext", "readOnlyRootFilesystem")), "read-only-root"),
    "escalation": (_set(CONTAINER + ("securityContext", "allowPrivilegeEscalation"), True),
                   "no-privilege-escalation"),
    "privileged": (_set(CONTAINER + ("securityContext", "privileged"), True), "no-privilege-escalation"),
    "caps-kept": (_set(CONTAINER + ("securityContext", "capabilities"), {"drop": ["NET_RAW"]}),
                  "capabilities"),
    "caps-added": (_set(CONTAINER + ("securityContext", "capabilities", "add"), ["SYS_ADMIN"]),
                   "capabilities"),
    "seccomp-unconfined": (_set(CONTAINER + ("securityContext", "seccompProfile"), {"type": "Unconfined"}),
                           "seccomp"),
    "host-network": (_set(POD + ("hostNetwork",), True), "host-namespaces"),
    "host-path": (_set(POD + ("volumes", 1), {"name": "tmp", "hostPath": {"path": "/tmp"}}), "host-path"),
}


@pytest.mark.parametrize("breach", sorted(BREACHES))
def test_policy_catches(breach):
    mutate, rule = BREACHES[breach]
    doc = _daemonset()
    assert policy.violations([doc]) == []
    mutate(doc)
    found = policy.violations([doc])
    assert any(line.endswith(f"[{rule}]") for line in found), (breach, found)


def test_pod_level_seccomp_and_non_root_count():
    """Set once for the pod, the container inherits them."""
    doc = _daemonset()
    sc = _container(doc)["securityContext"]
    del sc["seccompProfile"], sc["runAsNonRoot"]
    assert policy.violations([doc]) == []
    del doc["spec"]["template"]["spec"]["securityContext"]["seccompProfile"]
    assert any("[seccomp]" in line for line in policy.violations([doc]))


@pytest.mark.parametrize("template", ["workerTemplate", "leaderTemplate"])
def test_policy_reads_a_leaderworkersets_templates(template):
    """A LeaderWorkerSet's pods come from its worker template and, when it has one, its leader
    template: a breach in either is found."""
    doc = copy.deepcopy(next(d for d in rendered("cluster-lws") if d["kind"] == "LeaderWorkerSet"))
    templates = doc["spec"]["leaderWorkerTemplate"]
    templates.setdefault("leaderTemplate", copy.deepcopy(templates["workerTemplate"]))
    assert policy.violations([doc]) == []
    templates[template]["spec"]["containers"][0]["securityContext"]["privileged"] = True
    assert policy.violations([doc]) == [
        "LeaderWorkerSet/distarrayd-cluster: distarrayd: privileged [no-privilege-escalation]"]
