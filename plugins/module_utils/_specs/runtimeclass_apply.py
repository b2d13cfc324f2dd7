# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The one argument spec of runtimeclass_apply (module and contract test)."""

import copy

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._cluster_writers.gate_labels import DEFAULT_LABEL_PREFIX
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.auth import get_k8s_auth_argument_spec

RUNTIMECLASS_OPTIONS = {
    "name": {"type": "str", "required": True},
    "handler": {"type": "str", "required": True},
    "node_selector": {"type": "dict"},
    "overhead_pod_fixed": {"type": "dict"},
    "tolerations": {"type": "list", "elements": "dict"},
}


def get_runtimeclass_apply_argument_spec():
    argument_spec = get_k8s_auth_argument_spec()
    argument_spec.update(
        runtimeclasses={"type": "list", "elements": "dict", "required": True, "options": copy.deepcopy(RUNTIMECLASS_OPTIONS)},
        verdicts={"type": "list", "elements": "dict", "required": True},
        allow_unjudged_nodes={"type": "bool", "default": False},
        label_prefix={"type": "str", "default": DEFAULT_LABEL_PREFIX},
    )
    return {"argument_spec": argument_spec, "supports_check_mode": True}
