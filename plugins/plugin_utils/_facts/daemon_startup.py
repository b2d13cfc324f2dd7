"""Whether containerd itself starts with a loaded configuration (before any CRI rule matters).

Controller side (Python >= 3.11), pure functions over the parsed ``config dump``. ``config dump`` loads, merges and
decodes the files but runs none of the checks the daemon makes when it starts, so a dump prints fine for a daemon
that exits at once and serves nothing (docs/cri-startup.md has the table, each rule measured on the real daemons in
tests/integration/daemon/test_daemon_startup_rules.py):

* ``CreateTopLevelDirectories`` (``services/server/server.go`` @v1.6.20, @v1.7.35; ``cmd/containerd/server/server.go``
  @v2.2.9, @v2.3.4, @v2.4.2): ``root`` and ``state`` empty or equal ("root and state must be different paths").
* ``server.New`` (same files): a ``timeouts`` value that is no Go duration ("unable to parse … into a time duration");
  a ``required_plugins`` entry that does not load ("load required plugin …") or names no registered, enabled plugin
  ("required plugin [...] not included"). 1.x matches the list by plugin ID under a version 1 root and by URI under a
  version 2 root (``reqID`` in ``server.New`` @v1.7.35); 2.x migrates a version 1 root's short names to URIs
  (``v1MigratePluginName``, ``cmd/containerd/server/config/config.go`` @v2.2.9).
* A required CRI plugin (``io.containerd.grpc.v1.cri``, on 2.x also its runtime and images plugins) that the CRI
  start-up rules refuse (``_facts/cri_startup``) is a required plugin that fails: the daemon exits.
* Only the node can say (undecided from a dump; a running daemon serving CRI decides): a runtime with
  ``cgroup_writable = true`` (2.1+, ``ValidateRuntimeConfig`` in ``internal/cri/config/config.go``: "`cgroup_writable`
  is only supported on cgroup v2"), which takes the CRI runtime plugin down on a node without the unified cgroup v2
  hierarchy; found by the differential's trees on real 2.1.9, 2.2.9, 2.3.4 and 2.4.2 daemons (these machines run cgroup
  v1).

Plugin configuration that does not decode (``config.Decode``) makes ``config dump`` fail too, with the same message,
so it never reaches a verdict.
"""

import re

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.cri_startup import (
    CRI_IMAGES_PLUGIN_V3,
    CRI_PLUGIN_V2,
    CRI_RUNTIME_PLUGIN_V3,
    duration_problem,
)

_COMMON = (
    "io.containerd.content.v1.content", "io.containerd.differ.v1.walking", "io.containerd.event.v1.exchange",
    "io.containerd.gc.v1.scheduler", "io.containerd.grpc.v1.containers", "io.containerd.grpc.v1.content",
    "io.containerd.grpc.v1.cri", "io.containerd.grpc.v1.diff", "io.containerd.grpc.v1.events",
    "io.containerd.grpc.v1.healthcheck", "io.containerd.grpc.v1.images", "io.containerd.grpc.v1.introspection",
    "io.containerd.grpc.v1.leases", "io.containerd.grpc.v1.namespaces", "io.containerd.grpc.v1.snapshots",
    "io.containerd.grpc.v1.tasks", "io.containerd.grpc.v1.version", "io.containerd.internal.v1.opt",
    "io.containerd.metadata.v1.bolt", "io.containerd.runtime.v2.task", "io.containerd.service.v1.containers-service",
    "io.containerd.service.v1.content-service", "io.containerd.service.v1.diff-service",
    "io.containerd.service.v1.images-service", "io.containerd.service.v1.introspection-service",
    "io.containerd.service.v1.namespaces-service", "io.containerd.service.v1.snapshots-service",
    "io.containerd.service.v1.tasks-service", "io.containerd.snapshotter.v1.native",
    "io.containerd.snapshotter.v1.overlayfs", "io.containerd.snapshotter.v1.zfs",
    "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.btrfs",
)
_SINCE_1_7 = (
    "io.containerd.grpc.v1.sandbox-controllers", "io.containerd.grpc.v1.sandboxes", "io.containerd.grpc.v1.streaming",
    "io.containerd.grpc.v1.transfer", "io.containerd.internal.v1.tracing", "io.containerd.lease.v1.manager",
    "io.containerd.nri.v1.nri", "io.containerd.sandbox.store.v1.local", "io.containerd.snapshotter.v1.blockfile",
    "io.containerd.streaming.v1.manager", "io.containerd.tracing.processor.v1.otlp", "io.containerd.transfer.v1.local",
    "io.containerd.warning.v1.deprecations",
)
_ONLY_1X = ("io.containerd.internal.v1.restart", "io.containerd.monitor.v1.cgroups", "io.containerd.runtime.v1.linux",
            "io.containerd.snapshotter.v1.aufs")
_2X = _COMMON + _SINCE_1_7 + (
    "io.containerd.cri.v1.images", "io.containerd.cri.v1.runtime", "io.containerd.differ.v1.erofs",
    "io.containerd.grpc.v1.mounts", "io.containerd.image-verifier.v1.bindir", "io.containerd.monitor.container.v1.restart",
    "io.containerd.monitor.task.v1.cgroups", "io.containerd.mount-handler.v1.erofs", "io.containerd.mount-manager.v1.bolt",
    "io.containerd.podsandbox.controller.v1.podsandbox", "io.containerd.sandbox.controller.v1.shim",
    "io.containerd.shim.v1.manager", "io.containerd.snapshotter.v1.erofs", "io.containerd.ttrpc.v1.otelttrpc",
)
_SINCE_2_3 = ("io.containerd.http.v1.pprof", "io.containerd.metrics.v1.grpc-otel", "io.containerd.metrics.v1.grpc-prometheus",
              "io.containerd.server.v1.debug", "io.containerd.server.v1.grpc", "io.containerd.server.v1.grpc-tcp",
              "io.containerd.server.v1.metrics", "io.containerd.server.v1.ttrpc")

# The plugins each release registers on Linux: `ctr plugins ls` on a real daemon of the release with an empty config
# (tests/integration/daemon/test_daemon_startup_rules.py compares), plus btrfs, which the upstream build has and the
# test binaries leave out (tools/build-components builds with no_btrfs; cmd/containerd/builtins/btrfs_linux.go).
_SINCE_2_1 = ("io.containerd.differ.v1.erofs", "io.containerd.snapshotter.v1.erofs")
_SINCE_2_2 = ("io.containerd.grpc.v1.mounts", "io.containerd.mount-handler.v1.erofs", "io.containerd.mount-manager.v1.bolt")
REGISTERED_PLUGINS = {
    (1, 6): frozenset(_COMMON + _ONLY_1X + ("io.containerd.service.v1.leases-service",)),
    # 2.0.14 and 2.1.9: measured the same way on the builds of issue 24 (tools/build-components, containerd-2.0/-2.1).
    (2, 0): frozenset(_2X) - frozenset(_SINCE_2_1 + _SINCE_2_2),
    (2, 1): frozenset(_2X) - frozenset(_SINCE_2_2),
    (1, 7): frozenset(_COMMON + _ONLY_1X + _SINCE_1_7 + ("io.containerd.runtime.v2.shim", "io.containerd.sandbox.controller.v1.local")),
    (2, 2): frozenset(_2X),
    (2, 3): frozenset(_2X + _SINCE_2_3),
    (2, 4): frozenset(_2X + _SINCE_2_3),
}

# Registered plugins that load only where the node or the rest of the config allows: a snapshotter on its filesystem
# (zfs, btrfs, aufs), a devmapper pool, blockfile's scratch file, erofs support; tracing with an endpoint; the debug,
# TCP and metrics servers with an address; cgroup monitors and the v1 runtime on the host's cgroup layout; NRI when
# enabled. A dump cannot say whether they load: a required one leaves the verdict to the running daemon.
CONDITIONAL_PLUGINS = frozenset({
    "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.aufs",
    "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.blockfile", "io.containerd.snapshotter.v1.erofs",
    "io.containerd.differ.v1.erofs", "io.containerd.mount-handler.v1.erofs", "io.containerd.internal.v1.tracing",
    "io.containerd.tracing.processor.v1.otlp", "io.containerd.server.v1.debug", "io.containerd.server.v1.grpc-tcp",
    "io.containerd.server.v1.metrics", "io.containerd.http.v1.pprof", "io.containerd.monitor.v1.cgroups",
    "io.containerd.monitor.task.v1.cgroups", "io.containerd.runtime.v1.linux", "io.containerd.nri.v1.nri",
})

# The CRI plugins: whether they load is what _facts/cri_startup decides.
CRI_PLUGINS = frozenset({CRI_PLUGIN_V2, CRI_RUNTIME_PLUGIN_V3, CRI_IMAGES_PLUGIN_V3})

# A version 2 root's entries must look like URIs (ValidateV2, services/server/config/config.go @v1.7.35).
_URI = re.compile(r"io\.containerd\.[^.]+\.[^.]+\..+")

# v1MigratePluginName (cmd/containerd/server/config/config.go @v2.2.9): the short names 2.x maps to URIs.
_V1_NAMES_2X = {
    "cri": CRI_PLUGIN_V2, "cgroups": "io.containerd.monitor.v1.cgroups", "linux": "io.containerd.runtime.v1.linux",
    "scheduler": "io.containerd.gc.v1.scheduler", "bolt": "io.containerd.metadata.v1.bolt",
    "task": "io.containerd.runtime.v2.task", "opt": "io.containerd.internal.v1.opt",
    "restart": "io.containerd.internal.v1.restart", "tracing": "io.containerd.internal.v1.tracing",
    "otlp": "io.containerd.tracing.processor.v1.otlp", "aufs": "io.containerd.snapshotter.v1.aufs",
    "btrfs": "io.containerd.snapshotter.v1.btrfs", "devmapper": "io.containerd.snapshotter.v1.devmapper",
    "native": "io.containerd.snapshotter.v1.native", "overlayfs": "io.containerd.snapshotter.v1.overlayfs",
    "zfs": "io.containerd.snapshotter.v1.zfs",
}


def daemon_startup(document, release, cri_errors, root_version=None):
    """What containerd does with this loaded configuration when it starts.

    ``release`` is ``_containerd_config.release_of``'s ``{"low", "high", ...}``; ``cri_errors`` the CRI start-up errors
    (``cri_startup``); ``root_version`` the version the node's root file declares (None: not read), which decides how
    containerd 1.x matches ``required_plugins``. Returns ``{"errors": [sentence], "undecided": [sentence]}``: any error
    means containerd exits at start and serves nothing; an undecided sentence says what only the node can tell.
    """
    errors, undecided = [], []
    root, state = document.get("root"), document.get("state")
    if root == "" or state == "":
        errors.append(f"{'root' if root == '' else 'state'} is empty: containerd exits at start "
                      f"(\"{'root' if root == '' else 'state'} must be specified\")")
    elif isinstance(root, str) and root == state:
        errors.append(f"root and state are both {root[:80]!r}: containerd exits at start "
                      "(\"root and state must be different paths\")")
    timeouts = document.get("timeouts")
    for key, value in sorted(timeouts.items() if isinstance(timeouts, dict) else ()):
        if value == "" or duration_problem(value):  # time.ParseDuration("") fails too
            errors.append(f"timeouts.{key[:80]} = {str(value)[:40]!r} is not a Go duration: containerd exits at start "
                          "(\"unable to parse … into a time duration\")")
    listed = document.get("required_plugins")
    required = [entry for entry in listed if isinstance(entry, str)] if isinstance(listed, list) else []
    if required:
        plugin_errors, plugin_undecided = _required_plugins(required, document, release, cri_errors, root_version)
        errors.extend(plugin_errors)
        undecided.extend(plugin_undecided)
    undecided.extend(_cgroup_writable(document, release))
    return {"errors": errors, "undecided": undecided}


# The first release whose runtimes have cgroup_writable (absent from 2.0.14's `config default`, present from 2.1.9's).
CGROUP_WRITABLE_SINCE = (2, 1)


def _cgroup_writable(document, release):
    """A runtime with ``cgroup_writable = true``: the CRI runtime plugin starts only on a cgroup v2 node, which the dump
    does not say. Releases before 2.1 ignore the key."""
    if tuple(release["high"][:2]) < CGROUP_WRITABLE_SINCE:
        return []
    plugins = document.get("plugins") if isinstance(document.get("plugins"), dict) else {}
    runtime_plugin = plugins.get(CRI_RUNTIME_PLUGIN_V3) if isinstance(plugins.get(CRI_RUNTIME_PLUGIN_V3), dict) else {}
    containerd = runtime_plugin.get("containerd") if isinstance(runtime_plugin.get("containerd"), dict) else {}
    runtimes = containerd.get("runtimes") if isinstance(containerd.get("runtimes"), dict) else {}
    names = sorted(name for name, table in runtimes.items()
                   if isinstance(table, dict) and table.get("cgroup_writable") is True)
    if not names:
        return []
    return [f"runtime{'s' if len(names) > 1 else ''} {', '.join(repr(name[:63]) for name in names)} "
            f"set{'' if len(names) > 1 else 's'} cgroup_writable = true, which containerd 2.1 and later accept only "
            'on a node with the unified cgroup v2 hierarchy: elsewhere the CRI plugin fails to load ("`cgroup_writable` '
            'is only supported on cgroup v2") and no runtime is served']


def _minors(release):
    low, high = tuple(release["low"][:2]), tuple(release["high"][:2])
    if low == high:
        return [low]
    return [(major, minor) for major in range(low[0], high[0] + 1) for minor in range(0, 100) if low <= (major, minor) <= high]


def _required_plugins(required, document, release, cri_errors, root_version):
    disabled = {entry for entry in document.get("disabled_plugins") or () if isinstance(entry, str)}
    if release["low"][0] >= 2:
        return _check_required([_V1_NAMES_2X.get(entry, entry) for entry in required], disabled, release, cri_errors, by_id=False)
    if root_version is None and any(not _URI.fullmatch(entry) for entry in required + sorted(disabled)):
        root_version = 1  # a version 2 root naming no URI is refused whole (ValidateV2): this dump came from version 1
    if root_version is not None:
        return _check_required(required, disabled, release, cri_errors, by_id=root_version < 2)
    by_uri = _check_required(required, disabled, release, cri_errors, by_id=False)
    by_id = _check_required(required, disabled, release, cri_errors, by_id=True)
    if by_uri == by_id:
        return by_uri
    return [], [f"required_plugins {required[:8]} loads only if the root config is version 2 (containerd 1.x matches it "
                "by URI there, by plugin ID under a version 1 root), and the dump does not say which: judge it with the "
                "node's root config (host_root)"]


def _check_required(required, disabled, release, cri_errors, *, by_id):
    """``(errors, undecided)`` for ``required_plugins`` as this release matches it (``by_id``: a 1.x version 1 root)."""
    minors = _minors(release)
    tables = [REGISTERED_PLUGINS.get(minor) for minor in minors]
    measured = [table for table in tables if table is not None]
    every = frozenset().union(*measured) if measured else frozenset()
    always_registered = frozenset.intersection(*measured) if measured and len(measured) == len(tables) else frozenset()
    errors, undecided = [], []
    for entry in required:
        where = f"required_plugins names {entry[:80]!r}"
        uris = sorted(uri for uri in every if uri.rsplit(".", 1)[-1] == entry) if by_id else [entry]
        uri = uris[0] if len(uris) == 1 else None
        if uri is None or uri not in every:
            if len(tables) != len(measured) or (by_id and len(uris) > 1):
                undecided.append(f"{where}, which no measured containerd {release['text']} registers: whether it loads is not known")
            else:
                errors.append(f"{where}, which containerd {release['text']} does not have"
                              + (" (a version 1 root names plugins by ID, not URI)" if by_id and "." in entry else "")
                              + ": containerd exits at start (\"required plugin [...] not included\")")
        elif uri in disabled or (by_id and entry in disabled):
            errors.append(f"{where}, which is in disabled_plugins: containerd exits at start (\"required plugin [...] not included\")")
        elif uri in CRI_PLUGINS and cri_errors:
            errors.append(f"{where}, and the CRI plugin refuses this configuration: containerd exits at start "
                          f"(\"load required plugin {uri}\")")
        elif uri not in always_registered:
            undecided.append(f"{where}, which not every containerd {release['text']} registers: whether it loads is not known")
        elif uri in CONDITIONAL_PLUGINS:
            undecided.append(f"{where}, which loads only where the node supports it: a dump cannot tell whether containerd "
                             "starts, only the running daemon can")
    return errors, undecided
