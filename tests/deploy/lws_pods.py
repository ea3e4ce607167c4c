"""The pods a LeaderWorkerSet's controller creates from its templates, for checkers that know no
LeaderWorkerSet: checkov checks the built-in workload kinds only, so scripts/check-deploy.sh
appends these pods to each rendered overlay that has one. Each group has a leader (pod
<set>-<group>, from leaderTemplate, or workerTemplate when the set has none) and members
(<set>-<group>-<index>, from workerTemplate); one leader and one member of group 0 stand for them
all. They carry the labels the controller adds (kubernetes-sigs/lws,
api/leaderworkerset/v1/leaderworkerset_types.go), which the Services and NetworkPolicies select
on, and the set's annotations, where checkov's skips and their reasons are.

    python tests/deploy/lws_pods.py RENDERED.yaml   # prints the pods as YAML documents
"""

import copy
import sys

import yaml

SET_NAME = "leaderworkerset.sigs.k8s.io/name"
GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"


def _pod(lws, template, name, worker_index):
    meta = lws["metadata"]
    labels = dict(template.get("metadata", {}).get("labels", {}))
    labels.update({SET_NAME: meta["name"], GROUP_INDEX: "0", WORKER_INDEX: str(worker_index)})
    pod_meta = {"name": name, "labels": labels}
    if "namespace" in meta:
        pod_meta["namespace"] = meta["namespace"]
    if meta.get("annotations"):
        pod_meta["annotations"] = dict(meta["annotations"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta,
            "spec": copy.deepcopy(template["spec"])}


def pods(docs):
    """The leader and, when the group has members, one member of each LeaderWorkerSet in docs."""
    found = []
    for doc in docs:
        if doc.get("kind") != "LeaderWorkerSet":
            continue
        name = doc["metadata"]["name"]
        templates = doc["spec"]["leaderWorkerTemplate"]
        worker = templates["workerTemplate"]
        found.append(_pod(doc, templates.get("leaderTemplate", worker), f"{name}-0", 0))
        if templates.get("size", 1) > 1:
            found.append(_pod(doc, worker, f"{name}-0-1", 1))
    return found


def main(path):
    with open(path, encoding="utf-8") as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    found = pods(docs)
    if found:
        sys.stdout.write("---\n" + yaml.safe_dump_all(found, explicit_start=False, sort_keys=False))


if __name__ == "__main__":
    main(sys.argv[1])
