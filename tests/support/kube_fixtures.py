"""pytest plugin: a running Kubernetes API stand-in (``kube_api``) and builders of raw API objects.

Loaded from ``tests/conftest.py`` (``pytest_plugins``). Builders return camelCase dicts exactly as
the API server sends them, ready for ``kube_api.set_objects(...)`` or for a YAML manifest.
"""

import uuid

import pytest

from support.kube_standin import KubeStandIn, make_tls_material


@pytest.fixture(scope="session")
def kube_tls(tmp_path_factory):
    """CA, server and client certificates, made once per test session (openssl CLI)."""
    return make_tls_material(tmp_path_factory.mktemp("kube-tls"))


@pytest.fixture
def kube_api(kube_tls, tmp_path):
    """A started stand-in: ``.url``, ``.token``, ``.ca_path``, ``.kubeconfig_path``, ``.set_objects()``,
    ``.fail()``/``.fail_next()``, ``.delay_seconds``, ``.requests``/``.list_calls()``.

    Fails the test if the stand-in itself raised while serving, so a broken stand-in is never
    mistaken for a client bug.
    """
    workdir = tmp_path / "kube-api"
    workdir.mkdir()
    with KubeStandIn(kube_tls, workdir) as standin:
        yield standin
    assert not standin.handler_errors, "the API stand-in failed internally:\n" + "\n".join(standin.handler_errors)


def runtimeclass(name, handler, node_selector=None, overhead=None, tolerations=None):
    obj = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name}, "handler": handler}
    if overhead is not None:
        obj["overhead"] = {"podFixed": dict(overhead)}
    if node_selector is not None or tolerations is not None:
        obj["scheduling"] = {key: value for key, value in
                             (("nodeSelector", node_selector), ("tolerations", tolerations)) if value is not None}
    return obj


def node(name, labels=None, runtime_handlers=None, allocatable=None, internal_ip="10.0.0.10"):
    """A Node as a kubelet reports it; ``runtime_handlers`` are names or full dicts, None = field absent."""
    resources = allocatable or {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "1"}
    stamp = "2026-01-01T00:00:00Z"
    status = {
        "capacity": dict(resources), "allocatable": dict(resources),
        "addresses": [{"type": "InternalIP", "address": internal_ip}, {"type": "Hostname", "address": name}],
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is ready",
                        "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}],
        "nodeInfo": {"architecture": "amd64", "bootID": str(uuid.uuid5(uuid.NAMESPACE_DNS, name + "-boot")),
                     "containerRuntimeVersion": "containerd://2.1.4", "kernelVersion": "6.1.0-40-amd64",
                     "kubeProxyVersion": "v1.33.0", "kubeletVersion": "v1.33.0",
                     "machineID": uuid.uuid5(uuid.NAMESPACE_DNS, name).hex, "operatingSystem": "linux",
                     "osImage": "Debian GNU/Linux 12 (bookworm)",
                     "systemUUID": str(uuid.uuid5(uuid.NAMESPACE_DNS, name + "-system"))},
    }
    if runtime_handlers is not None:
        status["runtimeHandlers"] = [
            handler if isinstance(handler, dict)
            else {"name": handler, "features": {"recursiveReadOnlyMounts": True, "userNamespaces": False}}
            for handler in runtime_handlers]
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": {}, "status": status}


def pod(name, namespace="default", node_name=None, runtime_class_name=None, phase="Running", requests=None,
        init_requests=None, overhead=None, uid=None):
    """A Pod; ``requests``/``init_requests`` are one container's requests, ``overhead`` is spec.overhead."""
    container = {"name": "main", "image": "registry.example/cuda:12"}
    if requests is not None:
        container["resources"] = {"requests": dict(requests)}
    spec = {"containers": [container]}
    if init_requests is not None:
        spec["initContainers"] = [{"name": "init", "image": "registry.example/busybox:1",
                                   "resources": {"requests": dict(init_requests)}}]
    if overhead is not None:
        spec["overhead"] = dict(overhead)
    if node_name:
        spec["nodeName"] = node_name
    if runtime_class_name:
        spec["runtimeClassName"] = runtime_class_name
    metadata = {"name": name, "namespace": namespace, **({"uid": uid} if uid else {})}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": {"phase": phase}}


def event(pod_obj, message, reason="FailedCreatePodSandBox", name=None, count=1):
    """A core/v1 Event about ``pod_obj`` as the kubelet records it (Warning, source kubelet)."""
    pod_metadata = pod_obj["metadata"]
    involved = {"kind": "Pod", "namespace": pod_metadata["namespace"], "name": pod_metadata["name"], "apiVersion": "v1"}
    if pod_metadata.get("uid"):
        involved["uid"] = pod_metadata["uid"]
    stamp = "2026-01-01T00:00:00Z"
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name or f"{pod_metadata['name']}.{uuid.uuid4().hex[:16]}",
                         "namespace": pod_metadata["namespace"]},
            "involvedObject": involved, "reason": reason, "message": message, "type": "Warning", "count": count,
            "source": {"component": "kubelet", "host": pod_obj["spec"].get("nodeName", "")},
            "firstTimestamp": stamp, "lastTimestamp": stamp, "reportingComponent": "kubelet"}
