# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The one argument spec of node_handler_labels (module, action plugin and contract test)."""

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._cluster_writers.gate_labels import DEFAULT_LABEL_PREFIX
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.auth import get_k8s_auth_argument_spec


def get_node_handler_labels_argument_spec():
    argument_spec = get_k8s_auth_argument_spec()
    argument_spec.update(
        verdicts={"type": "list", "elements": "dict", "required": True},
        apply={"type": "bool", "default": False},
        bind_runtimeclasses={"type": "list", "elements": "str", "default": []},
        label_prefix={"type": "str", "default": DEFAULT_LABEL_PREFIX},
    )
    return {"argument_spec": argument_spec, "supports_check_mode": True}
