# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The preamble and the failure handling every module that writes to the cluster shares (runtimeclass_apply,
node_handler_labels), as kubernetes.core's ``AnsibleK8SModule`` gathers them: the module with its one argument spec,
``request_timeout`` checked, the ``kubernetes`` library required, the auth options, the insecure-TLS warning; and an
API call whose ``KubeAccessError`` or ``RuntimeGateError`` fails the task with its one sentence."""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.auth import auth_options_of, insecure_warning
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.client import HAS_KUBERNETES, KUBERNETES_IMPORT_ERROR
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.errors import KubeAccessError


def kube_module(module_spec):
    """``(module, auth_options)`` for a cluster-writing module built from ``module_spec`` (``get_<module>_argument_spec()``);
    fails the task when ``request_timeout`` is below 1 or the ``kubernetes`` library is missing."""
    module = AnsibleModule(**module_spec)
    params = module.params
    if params["request_timeout"] < 1:
        module.fail_json(msg=f"request_timeout must be at least 1, not {params['request_timeout']}")
    if not HAS_KUBERNETES:
        module.fail_json(msg=missing_required_lib("kubernetes"), exception=KUBERNETES_IMPORT_ERROR)
    auth_options = auth_options_of(params)
    if insecure_warning(auth_options):
        module.warn(insecure_warning(auth_options))
    return module, auth_options


def call_cluster(module, call, failure_fields=None):
    """``call()``'s result; a ``KubeAccessError`` fails the task with its result fields, a ``RuntimeGateError`` with its
    message. ``failure_fields(error)``: what the module adds to a failure (None: nothing)."""
    try:
        return call()
    except KubeAccessError as err:
        module.fail_json(**err.result_fields(), **(failure_fields(err) if failure_fields else {}))
    except RuntimeGateError as err:
        module.fail_json(msg=str(err), **(failure_fields(err) if failure_fields else {}))
    return None  # not reached: fail_json exits
