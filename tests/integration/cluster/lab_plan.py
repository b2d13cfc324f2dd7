"""The seed lab's objects (inventory/demo/cluster.yaml's classes on two kwok Nodes of 1 CPU) and the order they are made in.

Built with the API-object builders of support/kube_fixtures.py; created by the ``lab`` fixture (conftest.py).
"""
from support.kube_fixtures import pod, runtimeclass

NAMESPACE = "ml-canary"
GPU = {"nvidia.com/gpu.present": "true"}
# Nodes named as in inventory/demo, so each host judges the committed dump of that demo node. The lab's two Nodes of
# 1 CPU: gpu-node-01 (healthy, pool main) and gpu-node-07 (healthy, pool canary, where the mistyped class points).
# And gpu-node-06, cordoned (no pod lands there): its dump serves nvidia-cdi, but its status.runtimeHandlers (the
# kubelet's copy of what the running containerd serves) lacks it, so the SSH-free view must make it MISSING.
NODES = {"gpu-node-01": {**GPU, "gpufleet.example/pool": "main"},
         "gpu-node-06": {**GPU, "gpufleet.example/pool": "main"},
         "gpu-node-07": {**GPU, "gpufleet.example/pool": "canary"}}
SCHEDULABLE = ("gpu-node-01", "gpu-node-07")
NODE_IPS = {"gpu-node-01": "10.0.0.11", "gpu-node-06": "10.0.0.16", "gpu-node-07": "10.0.0.17"}
ONE_CPU = {"cpu": "1", "memory": "4Gi", "pods": "110"}
# What each kwok Node reports in status.runtimeHandlers ("" = the default handler).
FULL_HANDLERS = ["", "runc", "nvidia", "nvidia-cdi"]
RUNTIME_HANDLERS = {"gpu-node-01": FULL_HANDLERS, "gpu-node-06": ["", "runc", "nvidia"], "gpu-node-07": FULL_HANDLERS}
OVERHEAD = {"cpu": "250m", "memory": "120Mi"}
# The seed lab's classes, plus nvidia-vm: a class with overhead and no nodeSelector (it targets both nodes), so the
# comparison of the overhead warning with the scheduler also covers a pod with overhead that does fit.
RUNTIMECLASSES = [
    runtimeclass("nvidia", "nvidia"),
    runtimeclass("nvidia-cdi", "nvidia-cdi", node_selector=GPU),
    runtimeclass("nvidia-typo", "nvdia", node_selector={"gpufleet.example/pool": "canary"}, overhead=OVERHEAD),
    runtimeclass("nvidia-vm", "nvidia", overhead=OVERHEAD),
]
# (pod, class, CPU request), created in this order, each decided by the scheduler before the next. The plan (the tests
# read what the server says, they do not assume it):
#   train-canary-0  100m + 250m  -> gpu-node-07 (the only canary node; nothing checks the handler 'nvdia')
#   train-0         900m         -> gpu-node-01 (gpu-node-07 has 650m left)
#   infer-vm-0      100m + 250m  -> gpu-node-07 (gpu-node-01 has 100m left)
#   bigmem-canary-0 900m + 250m  -> Pending: 1150m > 1 CPU on the one node its class selects
#   train-vm-0      900m + 250m  -> Pending: 1150m > 1 CPU on every node (the same 900m as train-0)
LAB_PODS = [("train-canary-0", "nvidia-typo", "100m"), ("train-0", "nvidia", "900m"), ("infer-vm-0", "nvidia-vm", "100m"),
            ("bigmem-canary-0", "nvidia-typo", "900m"), ("train-vm-0", "nvidia-vm", "900m")]


def lab_pod(name, class_name, cpu, overhead=None):
    """A pod of the lab's namespace with one container requesting ``cpu``; ``overhead`` = its own spec.overhead."""
    obj = pod(name, NAMESPACE, runtime_class_name=class_name, requests={"cpu": cpu}, overhead=overhead)
    del obj["status"]  # the apiserver sets a new pod's status itself
    return obj
