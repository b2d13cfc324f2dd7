# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Compatibility shim: the node evidence code now lives in ``_node_gather``, ``_node_imports``, ``_node_listings``,
``_node_binaries`` and ``_containerd_release`` (issue 12). Re-exports the names others import; removed at merge.
"""

from __future__ import absolute_import, division, print_function

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._containerd_release import (  # noqa: F401
    parse_containerd_version,
    parse_version,
    between,
    relative_globs_from_cwd,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node_gather import (  # noqa: F401
    MAX_CONFIG_TEXT_BYTES,
    MAX_SYMLINK_HOPS,
    PSEUDO_FILE_SYSTEMS,
    SYMLINK_LOOP,
    find_executable,
    run_command,
    start_command,
    finish_command,
    is_node_root,
    host_path,
    node_path_of,
    read_text_file,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node_imports import (  # noqa: F401
    MAX_CONFIG_FILES,
    DAEMON_WORKING_DIRECTORY,
    non_magic_directory,
    walk_imports,
    expand_import,
    import_matches,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node_listings import (  # noqa: F401
    MAX_LISTING_ENTRIES,
    DROPIN_TEXT_SUFFIXES,
    list_directory,
    dropin_listings,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node_binaries import (  # noqa: F401
    NODE_PATH_DIRS,
    shim_binary_name,
    stat_binary,
    runtime_binaries,
)

__metaclass__ = type

__all__ = [
    "parse_containerd_version",
    "parse_version",
    "between",
    "relative_globs_from_cwd",
    "MAX_CONFIG_TEXT_BYTES",
    "MAX_SYMLINK_HOPS",
    "PSEUDO_FILE_SYSTEMS",
    "SYMLINK_LOOP",
    "find_executable",
    "run_command",
    "start_command",
    "finish_command",
    "is_node_root",
    "host_path",
    "node_path_of",
    "read_text_file",
    "MAX_CONFIG_FILES",
    "DAEMON_WORKING_DIRECTORY",
    "non_magic_directory",
    "walk_imports",
    "expand_import",
    "import_matches",
    "MAX_LISTING_ENTRIES",
    "DROPIN_TEXT_SUFFIXES",
    "list_directory",
    "dropin_listings",
    "NODE_PATH_DIRS",
    "shim_binary_name",
    "stat_binary",
    "runtime_binaries",
]
