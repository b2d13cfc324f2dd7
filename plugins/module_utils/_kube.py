# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Kept for imports written before the split (runtimeclass_info, k8s_nodes, bin/rc-crosscheck, tests): re-exports only.

The Kubernetes access code lives in ``_k8s/``, one job per file, as kubernetes.core's ``module_utils/k8s/`` does:
``auth`` (the shared auth argument spec), ``client`` (the API client), ``limits``, ``session`` (bounded requests),
``answers`` (what a server answered, in one sentence), ``lists`` (the cluster in one pass), ``errors``.
"""
# pylint: disable=unused-import

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.answers import (  # noqa: F401
    MAX_SERVER_MESSAGE_CHARS,
    list_shape_problem as _list_shape_problem,
    retry_after_seconds as _retry_after_seconds,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.auth import (  # noqa: F401
    AUTH_ARG_SPEC,
    REQUEST_TIMEOUT_ARG_SPEC,
    auth_options_of,
    get_k8s_auth_argument_spec,
    insecure_warning,
    resolve_auth_options,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.client import HAS_KUBERNETES, KUBERNETES_IMPORT_ERROR, build_api_client  # noqa: F401
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.errors import KubeAccessError, KubernetesLibraryMissing  # noqa: F401
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.limits import (  # noqa: F401
    DEFAULT_LIST_PAGE_BUDGET,
    DEFAULT_LIST_TIME_BUDGET,
    DEFAULT_PAGE_SIZE,
    DEFAULT_REQUEST_DEADLINE,
    DEFAULT_REQUEST_TIMEOUT,
    LIMIT_ARG_SPEC,
    resolve_limits,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.lists import list_cluster_objects  # noqa: F401
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.session import MAX_RETRY_AFTER, THROTTLE_RETRIES, ApiSession  # noqa: F401
