# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""runtimeclass_info's result for a cluster file: what the module returns for ``src``, without the kubernetes client.

Imports PyYAML (through ``manifest``) and nothing of the API side: importing the client costs about a second
per run (benchmarks/README.md) and a file needs none of it.
"""

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.manifest import read_manifest_file


def cluster_file_result(src, include_nodes, include_pods):
    """``{"changed", "runtimeclasses", "source", "api_requests", "pods"[, "nodes"]}`` read from the file ``src``.

    Raises ``RuntimeGateError`` naming the file when it cannot be read or holds no valid cluster objects."""
    cluster_objects = read_manifest_file(src)
    result = {"changed": False, "runtimeclasses": cluster_objects["runtimeclasses"], "source": {"type": "file", "path": src},
              "api_requests": 0, "pods": cluster_objects["pods"] if include_pods else []}
    if include_nodes:
        result["nodes"] = cluster_objects["nodes"]
    return result
