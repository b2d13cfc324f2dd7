# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Kept for imports written before the split (runtimeclass_info, k8s_nodes, bin/rc-crosscheck, tests): re-exports only.

The normalisers live in ``_k8s/objects.py``, the manifest file reader in ``_k8s/manifest.py``.
"""
# pylint: disable=unused-import

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.manifest import (  # noqa: F401
    HAS_YAML,
    MAX_MANIFEST_BYTES,
    YAML_IMPORT_ERROR,
    parse_manifest_text,
    read_manifest_file,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.objects import (  # noqa: F401
    EVENT_API_VERSIONS,
    NODE_API_VERSION,
    POD_API_VERSION,
    RUNTIMECLASS_API_VERSION,
    SANDBOX_FAILURE_REASON,
    normalise_cluster_objects,
    normalise_node,
    normalise_pod,
    normalise_runtimeclass,
    sandbox_failure_of,
)
