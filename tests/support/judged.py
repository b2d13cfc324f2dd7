"""Inputs of the judgement in the shape the core reads them (``_k8s/objects`` normalises the cluster's objects)."""


def runtimeclass(name, handler=None, node_selector=None, overhead=None):
    """A RuntimeClass as ``_k8s/objects`` returns it (not the API's manifest: see kube_fixtures.runtimeclass)."""
    return {"name": name, "handler": handler or name, "overhead_pod_fixed": overhead, "node_selector": node_selector,
            "tolerations": []}
