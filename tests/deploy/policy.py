"""Our pod-security policy for the rendered manifests: what the "restricted" Pod Security
Standard asks, plus resources, probes and numeric probe ports. violations() lists every breach;
EXCEPTIONS names the few a third-party workload needs, each with its reason."""

WORKLOAD_KINDS = {"DaemonSet", "Deployment", "StatefulSet", "Job", "ReplicaSet"}
PROBES = ("livenessProbe", "readinessProbe")

# (kind, name) -> {rule: reason}. Only for workloads we ship but do not write.
EXCEPTIONS = {
    ("DaemonSet", "nvidia-device-plugin-daemonset"): {
        "run-as-non-root": "registers a Unix socket in the kubelet's root-owned "
                           "/var/lib/kubelet/device-plugins",
        "read-only-root": "NVIDIA ships it with a writable root; read-only is untested upstream",
        "probes": "the device plugin serves no health endpoint",
        "host-path": "the kubelet's device-plugin directory is how device plugins register",
    },
}


def pod_templates(doc):
    """The pod templates of a workload (none for other objects): one for the built-in kinds; a
    LeaderWorkerSet has its workers' and, when it sets one, its leader's."""
    if doc.get("kind") == "Pod":
        return [doc]
    if doc.get("kind") == "CronJob":
        return [doc["spec"]["jobTemplate"]["spec"]["template"]]
    if doc.get("kind") in WORKLOAD_KINDS:
        return [doc["spec"]["template"]]
    if doc.get("kind") == "LeaderWorkerSet":
        templates = doc["spec"]["leaderWorkerTemplate"]
        return [templates[key] for key in ("leaderTemplate", "workerTemplate") if key in templates]
    return []


def _probe_ports(probe):
    for handler in ("grpc", "httpGet", "tcpSocket"):
        if handler in probe:
            yield handler, probe[handler].get("port")


def container_violations(pod_spec, container):
    """Yields (rule, message) for one container of a pod spec."""
    pod_sc = pod_spec.get("securityContext") or {}
    sc = container.get("securityContext") or {}
    name = container.get("name")

    resources = container.get("resources") or {}
    for section in ("requests", "limits"):
        for resource in ("cpu", "memory"):
            if resource not in (resources.get(section) or {}):
                yield "resources", f"{name}: resources.{section}.{resource} is not set"

    for probe_name in PROBES:
        probe = container.get(probe_name)
        if probe is None:
            yield "probes", f"{name}: no {probe_name}"
    for probe_name in PROBES + ("startupProbe",):
        probe = container.get(probe_name)
        if probe is None:
            continue
        for handler, port in _probe_ports(probe):
            # A named port is legal for httpGet, but gRPC probes need a number and a number
            # keeps every probe readable against the container's ports list.
            if not isinstance(port, int) or isinstance(port, bool):
                yield "probe-ports", f"{name}: {probe_name}.{handler}.port {port!r} is not a number"
            elif port not in {p.get("containerPort") for p in container.get("ports") or []}:
                yield "probe-ports", f"{name}: {probe_name} port {port} is not a container port"

    if not (sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")) is True):
        yield "run-as-non-root", f"{name}: runAsNonRoot is not true"
    if sc.get("runAsUser", pod_sc.get("runAsUser")) == 0:
        yield "run-as-non-root", f"{name}: runAsUser is 0"
    if sc.get("readOnlyRootFilesystem") is not True:
        yield "read-only-root", f"{name}: readOnlyRootFilesystem is not true"
    if sc.get("allowPrivilegeEscalation") is not False:
        yield "no-privilege-escalation", f"{name}: allowPrivilegeEscalation is not false"
    if sc.get("privileged") is True:
        yield "no-privilege-escalation", f"{name}: privileged"
    capabilities = sc.get("capabilities") or {}
    if "ALL" not in (capabilities.get("drop") or []):
        yield "capabilities", f"{name}: capabilities.drop does not hold ALL"
    if capabilities.get("add"):
        yield "capabilities", f"{name}: adds capabilities {capabilities['add']}"
    seccomp = (sc.get("seccompProfile") or pod_sc.get("seccompProfile") or {}).get("type")
    if seccomp != "RuntimeDefault":
        yield "seccomp", f"{name}: seccompProfile.type is {seccomp!r}, not RuntimeDefault"


def pod_violations(pod_spec):
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if pod_spec.get(field):
            yield "host-namespaces", f"{field} is set"
    for volume in pod_spec.get("volumes") or []:
        if "hostPath" in volume:
            yield "host-path", f"volume {volume['name']} is a hostPath"
    for container in (pod_spec.get("initContainers") or []) + pod_spec.get("containers", []):
        yield from container_violations(pod_spec, container)


def violations(docs):
    """Every breach in the documents that no EXCEPTIONS entry covers, as readable lines."""
    found = []
    for doc in docs:
        key = (doc["kind"], doc["metadata"]["name"])
        allowed = EXCEPTIONS.get(key, {})
        for template in pod_templates(doc):
            for rule, message in pod_violations(template["spec"]):
                if rule not in allowed:
                    found.append(f"{key[0]}/{key[1]}: {message} [{rule}]")
    return found
