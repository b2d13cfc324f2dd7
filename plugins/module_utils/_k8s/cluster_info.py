# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""runtimeclass_info's result from its validated parameters: the cluster file, or the API server's paginated lists.

Controller side. The module returns it as its result; node_status_verdicts, in node-status mode, calls it in-process on
the controller and keeps the lists out of ansible-core's result handling (at 10,000 Nodes and 20,000 Pods that handling
cost over a minute: benchmarks/README.md, "API mode").
"""

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.auth import AUTH_ARG_SPEC, insecure_warning
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.cluster_file import cluster_file_result
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.errors import KubeAccessError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.limits import LIMIT_ARG_SPEC
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.lists import list_cluster_objects
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.manifest import HAS_YAML

POSITIVE_OPTIONS = ("page_size", "request_timeout", *LIMIT_ARG_SPEC)


def cluster_info_result(params):
    """``(result, warnings)`` for runtimeclass_info's validated ``params``: the module's result
    (``{"changed", "runtimeclasses", "source", "api_requests", "pods"[, "nodes"]}``), or a failed one
    (``{"failed": True, "msg", ...}``) naming the option, the file or the server and what was wrong (a missing
    ``kubernetes`` library too: ``_k8s/client``). The module checks the libraries first, with ``missing_required_lib``."""
    for positive in POSITIVE_OPTIONS:
        if params[positive] < 1:
            return _failed(msg=f"{positive} must be at least 1, not {params[positive]}"), []
    if params["src"]:
        if not HAS_YAML:
            return _failed(msg="the Python library PyYAML is required to read src (pip install PyYAML)"), []
        try:
            return cluster_file_result(params["src"], include_nodes=params["nodes"], include_pods=params["pods"]), []
        except RuntimeGateError as err:
            return _failed(msg=str(err), source={"type": "file", "path": params["src"]}), []
    auth_options = {name: params[name] for name in AUTH_ARG_SPEC}
    warnings = [insecure_warning(auth_options)] if insecure_warning(auth_options) else []
    try:
        cluster_objects = list_cluster_objects(auth_options, include_nodes=params["nodes"], include_pods=params["pods"],
                                               page_size=params["page_size"], request_timeout=params["request_timeout"],
                                               **{name: params[name] for name in LIMIT_ARG_SPEC})
    except KubeAccessError as err:
        return _failed(**err.result_fields()), warnings
    except RuntimeGateError as err:
        return _failed(msg=str(err)), warnings
    result = {"changed": False, "runtimeclasses": cluster_objects["runtimeclasses"],
              "source": {"type": "api", "server": cluster_objects["server"]},
              "api_requests": cluster_objects["api_requests"], "pods": cluster_objects["pods"] if params["pods"] else []}
    if params["nodes"]:
        result["nodes"] = cluster_objects["nodes"]
    return result, warnings + list(cluster_objects["warnings"])


def _failed(**fields):
    return {"failed": True, "changed": False, **fields}
