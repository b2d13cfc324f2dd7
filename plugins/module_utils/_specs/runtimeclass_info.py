# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The one argument spec of runtimeclass_info (module and contract test)."""

import copy

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.auth import get_k8s_auth_argument_spec
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.limits import DEFAULT_PAGE_SIZE, LIMIT_ARG_SPEC


def get_runtimeclass_info_argument_spec():
    argument_spec = get_k8s_auth_argument_spec()
    argument_spec.update(
        src={"type": "path"},
        nodes={"type": "bool", "default": False},
        pods={"type": "bool", "default": False},
        page_size={"type": "int", "default": DEFAULT_PAGE_SIZE},
    )
    argument_spec.update(copy.deepcopy(LIMIT_ARG_SPEC))
    return {"argument_spec": argument_spec, "supports_check_mode": True}
