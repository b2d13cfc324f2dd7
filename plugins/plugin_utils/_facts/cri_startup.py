"""Whether containerd's CRI plugin starts with a loaded configuration, and which runtimes it then serves.

Controller side (Python >= 3.11), pure functions over the parsed ``config dump``. A dump loads fine while the CRI
plugin refuses to start: ``config dump`` validates no CRI setting (docs/containerd-loading.md §7). Each rule below is what the CRI
plugin checks when it starts, traced to containerd's source at the release (docs/cri-startup.md has the table):

* 1.6/1.7 — ``ValidatePluginConfig`` in ``pkg/cri/config/config.go`` (@v1.6.20, @v1.7.35): the deprecated
  ``containerd.default_runtime`` table becomes a runtime named ``default`` and the default; the deprecated
  ``containerd.untrusted_workload_runtime`` becomes a runtime named ``untrusted`` (an error when ``runtimes.untrusted``
  exists too); ``default_runtime_name`` empty or naming no runtime; ``systemd_cgroup``/``no_pivot`` and a runtime's
  ``runtime_engine``/``runtime_root`` only with the v1 linux runtime; on 1.7 ``privileged_without_host_devices_all_devices_allowed``
  without ``privileged_without_host_devices``; ``mirrors``/``configs.*.tls`` with ``config_path``; unparsable durations.
  ``NewCRIService`` in ``pkg/cri/server/service.go``: "failed to find snapshotter" when ``containerd.snapshotter`` names
  no loaded snapshotter plugin.
* 2.x — ``ValidateRuntimeConfig``/``ValidateImageConfig``/``ValidateServerConfig`` in ``internal/cri/config/config.go``
  (@v2.2.9, @v2.3.4, @v2.4.2): ``default_runtime_name`` empty or naming no runtime; the privileged pair; ``io_type``
  other than ``fifo``/``streaming``; unparsable durations; ``mirrors`` with ``config_path``. ``plugins/cri/images/plugin.go``:
  "failed to find snapshotter" for the images plugin's ``snapshotter``. The CRI service needs the runtime and images
  plugins, so disabling either takes it down.

A runtime the plugin lists can still be unusable: an empty ``runtime_type`` names no shim, so every sandbox of that
handler fails (the metadata store rejects an empty runtime name); such a handler is not served.
"""

import re

CRI_PLUGIN_V2 = "io.containerd.grpc.v1.cri"
CRI_RUNTIME_PLUGIN_V3 = "io.containerd.cri.v1.runtime"
CRI_IMAGES_PLUGIN_V3 = "io.containerd.cri.v1.images"
SNAPSHOTTER_PLUGIN_PREFIX = "io.containerd.snapshotter.v1."
TRANSFER_PLUGIN = "io.containerd.transfer.v1.local"
RUNTIME_V1_LINUX = "io.containerd.runtime.v1.linux"

# Plugin IDs whose presence in disabled_plugins takes the CRI service down on 2.x, which migrates the short "cri" of an
# unversioned file (Docker's containerd.io package ships disabled_plugins = ["cri"]; PR #10907). On 2.x the CRI service
# requires the runtime and images plugins (plugins/cri/cri.go). 1.x: see cri_startup's root_version.
CRI_PLUGIN_IDS_V3 = frozenset({CRI_PLUGIN_V2, CRI_RUNTIME_PLUGIN_V3, CRI_IMAGES_PLUGIN_V3, "cri"})

# Snapshotters compiled into containerd for Linux (cmd/containerd/builtins*_linux.go @v1.6.20, @v1.7.35;
# cmd/containerd/builtins/*.go @v2.2.9). A name outside these is never found. overlayfs and native load on any
# Linux node; the others load only where the node supports them (a btrfs or zfs filesystem, a devmapper pool).
SNAPSHOTTERS_1X = frozenset({"overlayfs", "native", "btrfs", "devmapper", "zfs", "aufs", "blockfile"})
SNAPSHOTTERS_2X = frozenset({"overlayfs", "native", "btrfs", "devmapper", "zfs", "blockfile", "erofs"})
ALWAYS_LOADING_SNAPSHOTTERS = frozenset({"overlayfs", "native"})
DEFAULT_SNAPSHOTTER = "overlayfs"

# container io types (IOTypeFifo, IOTypeStreaming in internal/cri/config/config.go @v2.2.9); empty means fifo.
IO_TYPES = frozenset({"", "fifo", "streaming"})

# Go's time.ParseDuration: "0", or one or more decimal numbers each with a unit.
_GO_DURATION = re.compile(r"[-+]?(?:0|(?:(?:\d+\.?\d*|\.\d+)(?:ns|us|\u00b5s|\u03bcs|ms|s|m|h))+)")


def cri_startup(document, dump_version, runtimes, root_version=None):
    """What the CRI plugin does with this loaded configuration.

    ``runtimes`` are the dump's runtimes (``_containerd_config._runtime_facts`` shape). Returns
    ``{"errors": [sentence, ...], "notes": [...], "added_runtimes": {name: runtime}, "default_runtime_name": name}``:
    any error means the plugin does not start and no runtime is served; ``added_runtimes`` are runtimes the plugin
    creates from deprecated tables (1.x), and ``default_runtime_name`` the default it then uses; ``undecided`` (1.x)
    says why the dump alone cannot tell whether the plugin starts.

    ``root_version`` is the version the node's root file declares (None: the file was not read). On 1.x it decides how
    ``disabled_plugins`` is matched: a version 1 root (no ``version`` line) names plugins by ID (``cri``), a version 2
    root by URI (``io.containerd.grpc.v1.cri``) — ``V1DisabledFilter``/``V2DisabledFilter`` in
    services/server/config/config.go, chosen by ``config.GetVersion()`` in services/server/server.go @v1.6.20, @v1.7.35.
    The 1.x dump prints ``version = 2`` and the list as written either way.
    """
    plugins = document.get("plugins") if isinstance(document.get("plugins"), dict) else {}
    disabled = [plugin for plugin in document.get("disabled_plugins") or () if isinstance(plugin, str)]
    if dump_version >= 3:
        return dict(_startup_2x(plugins, disabled, runtimes), undecided=None)
    by_uri = _startup_1x(plugins, disabled, runtimes)
    by_id = _startup_1x(plugins, _disabled_by_id(disabled), runtimes)
    if root_version is None and any(len(plugin.split(".")) < 4 for plugin in disabled):
        # A version 2 root with an entry that is no URI is refused whole ("invalid disabled plugin URI", ValidateV2 in
        # services/server/config/config.go @v1.6.20): a dump that printed one came from a version 1 root.
        root_version = 1
    if root_version is not None:
        return dict(by_id if root_version < 2 else by_uri, undecided=None)
    if by_uri["errors"] != by_id["errors"]:
        return dict(by_uri, undecided=(
            f"disabled_plugins {disabled} disables the CRI plugin or its snapshotter only if the root config is version "
            f"{2 if by_uri['errors'] else 1} ({'by URI' if by_uri['errors'] else 'by plugin ID'}), and the dump does not "
            "say which (containerd 1.x prints version = 2 for both): judge it with the node's root config (host_root)"))
    return dict(by_uri, undecided=None)


def _disabled_by_id(disabled):
    """The URIs a version 1 root's ``disabled_plugins`` turns off: an entry matches a plugin's ID, the URI's last part."""
    uris = [CRI_PLUGIN_V2, *(SNAPSHOTTER_PLUGIN_PREFIX + name for name in sorted(SNAPSHOTTERS_1X))]
    return [uri for uri in uris if uri.rsplit(".", 1)[-1] in disabled]


def _table(mapping, *keys):
    for key in keys:
        mapping = mapping.get(key) if isinstance(mapping, dict) else None
    return mapping if isinstance(mapping, dict) else {}


def _text(mapping, key):
    value = mapping.get(key)
    return value if isinstance(value, str) else ""


def _startup_1x(plugins, disabled, runtimes):
    cri = _table(plugins, CRI_PLUGIN_V2)
    containerd = _table(cri, "containerd")
    where = f'plugins."{CRI_PLUGIN_V2}".containerd'
    errors, notes, added = [], [], {}
    if CRI_PLUGIN_V2 in disabled:
        errors.append("the CRI plugin is in disabled_plugins: containerd serves no runtime to the kubelet")
    default_name = containerd.get("default_runtime_name") if "default_runtime_name" in containerd else "runc"
    default_name = default_name if isinstance(default_name, str) else ""
    all_runtimes = dict(runtimes)

    untrusted = _table(containerd, "untrusted_workload_runtime")
    if _text(untrusted, "runtime_type"):
        if "untrusted" in all_runtimes:
            errors.append(f"{where} has both untrusted_workload_runtime and runtimes.untrusted: the CRI plugin refuses "
                          "\"conflicting definitions\"")
        else:
            added["untrusted"] = _deprecated_runtime(untrusted)
            notes.append(f"{where}.untrusted_workload_runtime (deprecated) becomes the runtime 'untrusted'")
    legacy_default = _table(containerd, "default_runtime")
    if _text(legacy_default, "runtime_type"):
        added["default"] = _deprecated_runtime(legacy_default)
        default_name = "default"
        notes.append(f"{where}.default_runtime (deprecated) becomes the runtime 'default', and the default runtime")
    all_runtimes.update(added)

    errors.extend(_default_runtime_errors(default_name, all_runtimes))
    default_type = (all_runtimes.get(default_name) or {}).get("runtime_type") or ""
    for switch in ("systemd_cgroup", "no_pivot"):
        if cri.get(switch) is True and default_name in all_runtimes and default_type != RUNTIME_V1_LINUX:
            errors.append(f'plugins."{CRI_PLUGIN_V2}".{switch} = true only works with the default runtime of type '
                          f"{RUNTIME_V1_LINUX}, not {default_type or 'an empty type'}: the CRI plugin refuses to start")
    for name, table in sorted(_table(containerd, "runtimes").items()):
        if not isinstance(table, dict):
            continue
        for key in ("runtime_engine", "runtime_root"):
            if _text(table, key) and _text(table, "runtime_type") != RUNTIME_V1_LINUX:
                errors.append(f"{where}.runtimes.{name}.{key} only works with runtime_type {RUNTIME_V1_LINUX}: "
                              "the CRI plugin refuses to start")
        errors.extend(_privileged_pair_errors(f"{where}.runtimes.{name}", table))
    errors.extend(_registry_errors(_table(cri, "registry"), f'plugins."{CRI_PLUGIN_V2}".registry'))
    for key in ("stream_idle_timeout", "image_pull_progress_timeout", "drain_exec_sync_io_timeout"):
        errors.extend(_duration_errors(cri, key, f'plugins."{CRI_PLUGIN_V2}"'))
    snapshot_error, snapshot_note = _snapshotter_problem(
        _text(containerd, "snapshotter") or DEFAULT_SNAPSHOTTER, disabled, SNAPSHOTTERS_1X, f"{where}.snapshotter")
    errors.extend(snapshot_error)
    notes.extend(snapshot_note)
    return {"errors": errors, "notes": notes, "added_runtimes": added, "default_runtime_name": default_name}


def _startup_2x(plugins, disabled, runtimes):
    runtime_plugin = _table(plugins, CRI_RUNTIME_PLUGIN_V3)
    containerd = _table(runtime_plugin, "containerd")
    images = _table(plugins, CRI_IMAGES_PLUGIN_V3)
    where = f'plugins."{CRI_RUNTIME_PLUGIN_V3}".containerd'
    errors, notes = [], []
    off = sorted({plugin for plugin in disabled if plugin in CRI_PLUGIN_IDS_V3})
    if off:
        errors.append(f"{', '.join(off)} {'is' if len(off) == 1 else 'are'} in disabled_plugins: the CRI service "
                      "does not start and containerd serves no runtime to the kubelet")
    default_name = containerd.get("default_runtime_name") if "default_runtime_name" in containerd else "runc"
    default_name = default_name if isinstance(default_name, str) else ""
    errors.extend(_default_runtime_errors(default_name, runtimes))
    for name, table in sorted(_table(containerd, "runtimes").items()):
        if not isinstance(table, dict):
            continue
        errors.extend(_privileged_pair_errors(f"{where}.runtimes.{name}", table))
        io_type = table.get("io_type", "")
        if io_type not in IO_TYPES:
            errors.append(f"{where}.runtimes.{name}.io_type = {str(io_type)[:40]!r} is neither fifo nor streaming: "
                          "the CRI plugin refuses to start")
    errors.extend(_duration_errors(runtime_plugin, "drain_exec_sync_io_timeout", f'plugins."{CRI_RUNTIME_PLUGIN_V3}"'))
    errors.extend(_duration_errors(_table(plugins, CRI_PLUGIN_V2), "stream_idle_timeout", f'plugins."{CRI_PLUGIN_V2}"'))
    errors.extend(_duration_errors(images, "image_pull_progress_timeout", f'plugins."{CRI_IMAGES_PLUGIN_V3}"'))
    errors.extend(_registry_errors(_table(images, "registry"), f'plugins."{CRI_IMAGES_PLUGIN_V3}".registry', tls=False))
    snapshot_error, snapshot_note = _snapshotter_problem(
        _text(images, "snapshotter") or DEFAULT_SNAPSHOTTER, disabled, SNAPSHOTTERS_2X, f'plugins."{CRI_IMAGES_PLUGIN_V3}".snapshotter')
    errors.extend(snapshot_error)
    notes.extend(snapshot_note)
    errors.extend(_transfer_errors(plugins, disabled))
    return {"errors": errors, "notes": notes, "added_runtimes": {}, "default_runtime_name": default_name}


def _transfer_errors(plugins, disabled):
    """2.x: the CRI service requires the transfer plugin (``Requires`` in plugins/cri/cri.go @v2.2.9), which fails when a
    snapshotter of its ``unpack_config`` is missing — by default the platform's overlayfs (``defaultUnpackConfig`` in
    plugins/transfer/plugin_defaults_other.go; "snapshotter %q not found" in plugins/transfer/plugin.go)."""
    if TRANSFER_PLUGIN in disabled:
        return [f"{TRANSFER_PLUGIN} is in disabled_plugins: the CRI service requires it and does not start"]
    unpack = _table(plugins, TRANSFER_PLUGIN).get("unpack_config")
    snapshotters = [DEFAULT_SNAPSHOTTER] if unpack is None else [
        _text(entry, "snapshotter") for entry in unpack if isinstance(entry, dict)] if isinstance(unpack, list) else []
    errors = []
    for name in snapshotters:
        if SNAPSHOTTER_PLUGIN_PREFIX + name in disabled or name not in SNAPSHOTTERS_2X:
            errors.append(f'the transfer service unpacks with snapshotter {name[:40]!r}'
                          f'{"" if unpack is not None else " (its default)"}, which is '
                          f'{"disabled" if SNAPSHOTTER_PLUGIN_PREFIX + name in disabled else "no snapshotter containerd has"}: '
                          "the transfer plugin fails, and the CRI service that requires it does not start")
    return errors


def _deprecated_runtime(table):
    options = table.get("options") if isinstance(table.get("options"), dict) else {}
    binary_name = options.get("BinaryName")
    return {"runtime_type": _text(table, "runtime_type") or None,
            "binary_name": binary_name if isinstance(binary_name, str) and binary_name else None,
            "base_runtime_spec": _text(table, "base_runtime_spec") or None,
            "options": options}


def base_spec_problems(runtimes, base_specs):
    """``(errors, undecided)`` for the runtimes' ``base_runtime_spec`` files.

    The CRI plugin opens and decodes every runtime's file when it starts and refuses to start when one fails
    (``loadBaseOCISpecs``: ``pkg/cri/server/service.go`` @v1.6.20, @v1.7.35; ``plugins/cri/runtime/plugin.go`` @v2.2.9,
    @v2.3.4, @v2.4.2). ``base_specs`` is the node's ``base_runtime_specs`` evidence (``{path: {"state", "detail"}}``,
    ``_node/base_specs``); None when the node was not looked at (a dump judged by itself): a file named then is undecided.
    """
    errors, undecided = [], []
    for name, runtime in sorted(runtimes.items()):
        path = (runtime or {}).get("base_runtime_spec")
        if not path:
            continue
        where = f"runtime {name!r} has base_runtime_spec {path[:200]!r}"
        entry = base_specs.get(path) if isinstance(base_specs, dict) else None
        state = entry.get("state") if isinstance(entry, dict) else None
        if state in ("missing", "invalid"):
            errors.append(f"{where}, which {entry.get('detail') or state} on the node: the CRI plugin refuses to start "
                          "(\"failed to load base OCI spec from file\")")
        elif state != "ok":
            why = (entry or {}).get("detail") if isinstance(entry, dict) else None
            undecided.append(f"{where}, and whether that file exists and holds an OCI spec on the node is not known"
                             + (f" (it {why})" if why else " (the node's files were not examined)")
                             + ": the CRI plugin refuses to start without it")
    return errors, undecided


def _default_runtime_errors(default_name, runtimes):
    if not default_name:
        return ["default_runtime_name is empty: the CRI plugin refuses to start (\"`default_runtime_name` is empty\")"]
    if default_name not in runtimes:
        return [f"default_runtime_name {default_name!r} is not among the loaded runtimes [{', '.join(sorted(runtimes))}]: "
                "the CRI plugin fails validation and serves no runtime"]
    return []


def _privileged_pair_errors(where, table):
    if table.get("privileged_without_host_devices_all_devices_allowed") is True and table.get("privileged_without_host_devices") is not True:
        return [f"{where}.privileged_without_host_devices_all_devices_allowed needs privileged_without_host_devices = true: "
                "the CRI plugin refuses to start"]
    return []


def _registry_errors(registry, where, tls=True):
    if not _text(registry, "config_path"):
        return []
    errors = []
    if _table(registry, "mirrors"):
        errors.append(f"{where} sets both mirrors and config_path: the CRI plugin refuses to start")
    if tls and any(isinstance(config, dict) and isinstance(config.get("tls"), dict) and config["tls"]
                   for config in _table(registry, "configs").values()):
        errors.append(f"{where} sets both configs.*.tls and config_path: the CRI plugin refuses to start")
    return errors


def duration_problem(value):
    """True when ``value`` is a string Go's ``time.ParseDuration`` refuses (an empty string means unset)."""
    return isinstance(value, str) and bool(value) and not _GO_DURATION.fullmatch(value)


def _duration_errors(table, key, where):
    value = table.get(key)
    if not duration_problem(value):
        return []
    return [f"{where}.{key} = {value[:40]!r} is not a Go duration (e.g. \"30s\", \"5m\"): the CRI plugin refuses to start"]


def _snapshotter_problem(name, disabled, known, where):
    """``([error], [note])`` for the CRI plugin's snapshotter."""
    if SNAPSHOTTER_PLUGIN_PREFIX + name in disabled:
        return [f"{where} is {name!r}, but {SNAPSHOTTER_PLUGIN_PREFIX}{name} is in disabled_plugins: the CRI plugin "
                f"fails (\"failed to find snapshotter {name!r}\")"], []
    if name not in known:
        return [f"{where} is {name[:40]!r}, which is no snapshotter containerd has: the CRI plugin fails "
                "(\"failed to find snapshotter\")"], []
    if name not in ALWAYS_LOADING_SNAPSHOTTERS:
        return [], [f"{where} is {name!r}: the CRI plugin starts only where that snapshotter loads on the node"]
    return [], []


def unusable_runtimes(runtimes):
    """``{name: why}`` for loaded runtimes whose pods cannot start although the CRI plugin lists them."""
    return {name: "its runtime_type is empty, so no shim is named and every sandbox of this handler fails"
            for name, runtime in runtimes.items() if not (runtime or {}).get("runtime_type")}
