# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""What the ``containerd_runtimes`` role writes: the plan for one node, pure functions.

Controller side (``tomllib``). ``make_plan`` takes the node's evidence (root file text, containerd
version, the files the root's imports resolve to now) and the requested runtimes, and returns the
preflight errors, the files to write and the imports to add; ``_change/proof`` proves the plan with
the real binary. Every rule comes from docs/containerd-loading.md (§ numbers below).
"""

import copy
import posixpath
import re
import tomllib

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node import goglob as _goglob
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.containerd_config import (
    BUILTIN_DEFAULT_RUNTIME,
    CRI_PLUGIN_V2,
    CRI_RUNTIME_PLUGIN_V3,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.dns_names import is_dns_label
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.inherit import (
    merged_file_runtimes,
    with_inherited,
)
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.toml_write import TomlWriteError, add_import, dumps

DEFAULT_RUNTIME_TYPE = "io.containerd.runc.v2"
# The drop-in's file name: what `ls` shows plainly (no dot file, no space, no control character).
_DROPIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\.toml")
_CONTROL_CHARACTER = re.compile(r"[\x00-\x1f\x7f]")
_VERSION = re.compile(r"^(\d+)\.(\d+)")
MANAGED_HEADER = "# Managed by the gpufleet.runtime_gate.containerd_runtimes role: changes here are overwritten.\n"


def config_target(containerd_version):
    """``(max config version, CRI runtime plugin key)`` the binary reads (docs/containerd-loading.md §3 table)."""
    match = _VERSION.match(containerd_version or "")
    if not match:
        raise RuntimeGateError(f"cannot tell the containerd version from {containerd_version!r}")
    major, minor = int(match.group(1)), int(match.group(2))
    if major < 2:
        return 2, CRI_PLUGIN_V2
    if (major, minor) < (2, 3):
        return 3, CRI_RUNTIME_PLUGIN_V3
    return 4, CRI_RUNTIME_PLUGIN_V3


def server_settings_for_v4(settings):
    """Top-level ``grpc``/``ttrpc``/``debug``/``metrics`` settings moved to their version 4 plugin tables.

    containerd 2.3+ reads those top-level tables only in files below version 4 (``serviceMigrate`` in
    ``cmd/containerd/server/config/config.go`` @v2.3.4); in a version 4 file they are ignored, and the socket silently
    moves back to the default. The same moves as containerd's own migration, so the loaded configuration stays the same.
    """
    settings = copy.deepcopy(settings)
    plugins = settings.setdefault("plugins", {})
    grpc = settings.pop("grpc", None) or {}
    ttrpc = settings.pop("ttrpc", None) or {}
    debug = settings.pop("debug", None) or {}
    metrics = settings.pop("metrics", None) or {}
    tcp_keys = {"tcp_address": "address", "tcp_tls_ca": "tls_ca", "tcp_tls_cert": "tls_cert", "tcp_tls_key": "tls_key",
                "tcp_tls_common_name": "tls_common_name"}
    grpc_table = {key: value for key, value in grpc.items() if key not in tcp_keys}
    if grpc_table:
        plugins.setdefault("io.containerd.server.v1.grpc", grpc_table)
    tcp_table = {tcp_keys[key]: value for key, value in grpc.items() if key in tcp_keys}
    if tcp_table.get("address"):
        for key in ("max_recv_message_size", "max_send_message_size"):
            if key in grpc:
                tcp_table[key] = grpc[key]
        plugins.setdefault("io.containerd.server.v1.grpc-tcp", tcp_table)
    if not ttrpc.get("address") and grpc.get("address"):
        ttrpc = dict(ttrpc, address=grpc["address"] + ".ttrpc")
        for key in ("uid", "gid"):
            if not ttrpc.get(key) and grpc.get(key):
                ttrpc[key] = grpc[key]
    if ttrpc:
        plugins.setdefault("io.containerd.server.v1.ttrpc", ttrpc)
    debug_address = {key: value for key, value in debug.items() if key in ("address", "uid", "gid")}
    if debug_address.get("address"):
        plugins.setdefault("io.containerd.server.v1.debug", debug_address)
        debug = {key: value for key, value in debug.items() if key not in debug_address}
    if debug:
        settings["debug"] = debug  # level and format stay top-level in version 4
    if metrics.get("grpc_histogram"):
        plugins.setdefault("io.containerd.metrics.v1.grpc-prometheus", {"grpc_histogram": metrics["grpc_histogram"]})
    if metrics.get("address"):
        plugins.setdefault("io.containerd.server.v1.metrics", {"address": metrics["address"]})
    if not plugins:
        settings.pop("plugins")
    return settings


def cri_key_for(config_version):
    """The plugin key runtimes live under in a file of ``config_version`` (2: grpc.v1.cri, 3/4: cri.v1.runtime)."""
    return CRI_PLUGIN_V2 if config_version <= 2 else CRI_RUNTIME_PLUGIN_V3


def runtime_name_errors(runtimes):
    errors = []
    seen = set()
    for runtime in runtimes:
        name = runtime.get("name")
        if not is_dns_label(name):  # a RuntimeClass handler must be one (node/v1 validation)
            errors.append(
                f"option runtimes: runtime name {name!r} is not a DNS-1123 label (lower-case a-z, 0-9, '-', "
                "at most 63 characters, starting and ending alphanumeric): no RuntimeClass handler could select it"
            )
        elif name in seen:
            errors.append(f"option runtimes: runtime {name!r} is listed twice")
        seen.add(name)
    return errors


def input_errors(*, root_path, runtimes, dropin_dir, dropin_name, import_pattern=None):
    """The role's inputs checked by themselves, before the node is read (check mode too): names, paths, places.

    The action plugin asks this before its first probe, which would glob the import pattern and read what it matches:
    a drop-in directory such as /etc/cron.d must be refused before anything there is read, not after.
    """
    errors = runtime_name_errors(runtimes)
    import_pattern = import_pattern or posixpath.join(dropin_dir, "*.toml")
    for name, path in (("dropin_dir", dropin_dir), ("import_pattern", import_pattern)):
        if not path.startswith("/"):
            errors.append(f"option {name} {path!r} is relative: containerd 1.6.0-1.6.28 and 1.7.0-1.7.15 resolve "
                          "relative globs against the daemon's working directory, so it must be absolute")
        elif _CONTROL_CHARACTER.search(path):
            errors.append(f"option {name} {path!r} holds a control character (a newline, a tab...): no containerd "
                          "configuration path has one")
    errors.extend(_dropin_dir_errors(dropin_dir, root_path))
    if not _DROPIN_NAME.fullmatch(dropin_name):
        errors.append(f"option dropin_name {dropin_name!r} must be a plain file name ending in .toml "
                      "(letters, digits, '.', '_' and '-', not starting with '.'): the import pattern "
                      f"{posixpath.join(dropin_dir, '*.toml')} loads only .toml files, and a name ls shows plainly is one "
                      "an operator finds")
    return errors


def _dropin_dir_errors(dropin_dir, root_path):
    """The drop-in holds runtimes containerd runs as root: it belongs with the root config, under its directory.

    A directory elsewhere (/etc/cron.d, ~/.ssh) would have the role write a file another program reads; '..' is
    resolved first, so /etc/containerd/../cron.d is as far out as /etc/cron.d.
    """
    if not dropin_dir.startswith("/") or not root_path.startswith("/"):
        return []  # relative paths are refused with their own message
    config_dir = posixpath.dirname(posixpath.normpath(root_path))
    resolved = posixpath.normpath(dropin_dir)
    if resolved == config_dir or resolved.startswith(config_dir.rstrip("/") + "/"):
        return []
    return [f"option dropin_dir {dropin_dir!r} is outside {config_dir}, the directory of the root config "
            f"{root_path}: the role writes its drop-in only there or below (for example {config_dir}/conf.d)"]


def runtime_table(runtime):
    """The TOML table of one requested runtime: runtime_type, then options (BinaryName first)."""
    table = {"runtime_type": runtime.get("runtime_type") or DEFAULT_RUNTIME_TYPE}
    for key in ("runtime_engine", "runtime_root", "base_runtime_spec"):
        if runtime.get(key):
            table[key] = runtime[key]
    options = {}
    if runtime.get("binary_name"):
        options["BinaryName"] = runtime["binary_name"]
    options.update(runtime.get("options") or {})
    if options:
        table["options"] = options
    return table


def default_guard_lines(new_default):
    """What changing ``default_runtime_name`` reaches: every pod on the node that names no RuntimeClass."""
    return [f"DEFAULT_RUNTIME={new_default}", "AFFECTED=all", "NEEDS_RUNTIMECLASS=no", "BLAST_RADIUS=node"]


def default_change_error(plan, new_default):
    """The refusal of a default runtime change (sets the plan's guard lines)."""
    plan["guard_lines"] = default_guard_lines(new_default)
    return (
        f"changing default_runtime_name from {plan['current_default_runtime'] or 'unknown'!r} to {new_default!r} "
        "sends every pod on the node that names no RuntimeClass through it; set "
        "option allow_default_change: true to do so"
    )


def import_covers(entry, path):
    """Whether the absolute import ``entry`` loads ``path`` (Go filepath.Match only for entries with ``*``, §1).

    Relative entries never count: containerd 1.6.0-1.6.28/1.7.0-1.7.15 resolve a relative glob against
    the process working directory, so the role always relies on an absolute entry of its own.
    """
    if not entry.startswith("/"):
        return False
    if "*" in entry:
        try:
            return _goglob.match(entry, path)
        except _goglob.GlobPatternError:
            return False
    return entry == path


def load_order(root_path, imports, glob_matches, planned_paths):
    """The files containerd loads, in order, as they will be after the change (one import level, §1).

    ``glob_matches`` maps each import entry to what Go's Glob returns for it on the node now;
    ``planned_paths`` are files the role will create, added where an entry matches them.
    """
    order = [root_path]
    for entry in imports:
        absolute = entry if entry.startswith("/") else posixpath.join(posixpath.dirname(root_path), entry)
        if "*" in entry:
            found = set(glob_matches.get(entry) or [])
            found.update(path for path in planned_paths if import_covers(absolute, path))
            paths = sorted(found)
        else:
            paths = [absolute]
        for path in paths:
            if path not in order:  # deduplicated by exact path string, first position wins (§1)
                order.append(path)
    return order


def _declares_cri(document):
    plugins = document.get("plugins") if isinstance(document, dict) else None
    return isinstance(plugins, dict) and (CRI_PLUGIN_V2 in plugins or "cri" in plugins)


class PlanRefused(Exception):
    """A step of ``make_plan`` that refuses the plan; its arguments are the error messages (one or more)."""


def make_plan(
    *,
    root_path,
    root_text,
    containerd_version,
    runtimes,
    dropin_dir,
    dropin_name,
    import_pattern=None,
    manage_root_config=False,
    root_settings=None,
    default_runtime=None,
    allow_default_change=False,
    current_default_runtime=None,
    glob_matches=None,
    imported_texts=None,
    cri_settings=None,
):
    """The plan for one node; ``errors`` non-empty means: touch nothing.

    Returns ``{"errors", "guard_lines", "notes", "files": [{"path", "content"}] (drop-in first, root
    last), "imports_added", "load_order", "config_version", "dropin_version", "cri_plugin",
    "expected": {"runtimes": {name: table}, "default_runtime"}}``.

    The steps, each its own function: the inputs (``new_plan``), the root file (``root_candidate``), the drop-in's
    version (``dropin_version_of``), the import that loads the drop-in (``root_imports_with_dropin``), the files
    loaded today (``loaded_documents``), the runtime merge (``dropin_document``) and the files to write
    (``planned_files``). The first step that refuses ends the plan with its errors.
    """
    plan = new_plan(root_path=root_path, runtimes=runtimes, dropin_dir=dropin_dir, dropin_name=dropin_name,
                    import_pattern=import_pattern, containerd_version=containerd_version, default_runtime=default_runtime,
                    current_default_runtime=current_default_runtime, allow_default_change=allow_default_change)
    dropin_path = posixpath.join(dropin_dir, dropin_name)
    import_pattern = import_pattern or posixpath.join(dropin_dir, "*.toml")
    try:
        _fill_plan(plan, root_path=root_path, root_text=root_text, containerd_version=containerd_version,
                   runtimes=runtimes, dropin_path=dropin_path, import_pattern=import_pattern,
                   manage_root_config=manage_root_config, root_settings=root_settings, default_runtime=default_runtime,
                   allow_default_change=allow_default_change, current_default_runtime=current_default_runtime,
                   glob_matches=glob_matches or {}, imported_texts=imported_texts or {}, cri_settings=cri_settings)
    except PlanRefused as refused:
        plan["errors"].extend(refused.args)
    return plan


def new_plan(*, root_path, runtimes, dropin_dir, dropin_name, import_pattern, containerd_version, default_runtime,
             current_default_runtime, allow_default_change):
    """The empty plan, with the errors of the inputs alone (names, paths) and the runtimes it must make loaded."""
    return {
        "errors": input_errors(root_path=root_path, runtimes=runtimes, dropin_dir=dropin_dir, dropin_name=dropin_name,
                               import_pattern=import_pattern),
        "guard_lines": [],
        "notes": [],
        "files": [],
        "imports_added": [],
        "load_order": [],
        "containerd_version": containerd_version,
        "config_version": None,
        "dropin_version": None,
        "cri_plugin": None,
        "expected": {"runtimes": {r.get("name"): runtime_table(r) for r in runtimes}, "default_runtime": default_runtime},
        # The default the node runs now (None: unknown) and whether it may change: the candidate's dump is judged
        # against them too, since root_settings or a carried table can set the default without default_runtime.
        "current_default_runtime": current_default_runtime,
        "allow_default_change": allow_default_change,
    }


def _fill_plan(plan, *, root_path, root_text, containerd_version, runtimes, dropin_path, import_pattern,
               manage_root_config, root_settings, default_runtime, allow_default_change, current_default_runtime,
               glob_matches, imported_texts, cri_settings):
    """``make_plan``'s steps in order, filling ``plan``; raises ``PlanRefused`` at the first step that refuses."""
    try:
        config_version, _binary_key = config_target(containerd_version)
    except RuntimeGateError as error:
        raise PlanRefused(str(error)) from None
    plan["config_version"] = config_version
    if plan["errors"]:
        return
    if not import_covers(import_pattern, dropin_path):
        raise PlanRefused(
            f"option import_pattern {import_pattern!r} does not match the drop-in {dropin_path!r} "
            "(Go filepath.Match: '*' never crosses '/'): containerd would never load it"
        )
    root_document, candidate_root = root_candidate(root_path, root_text, config_version, import_pattern,
                                                   manage_root_config=manage_root_config, root_settings=root_settings)
    dropin_version = dropin_version_of(root_path, root_document, config_version, containerd_version)
    plan.update(dropin_version=dropin_version, cri_plugin=cri_key_for(dropin_version))
    imports, candidate_root, plan["imports_added"] = root_imports_with_dropin(
        root_path, root_document, candidate_root, dropin_path, import_pattern, manage_root_config=manage_root_config)
    plan["load_order"] = order = load_order(root_path, imports, glob_matches, [dropin_path])
    if dropin_path not in order:
        raise PlanRefused(f"no import of root config {root_path} loads the drop-in {dropin_path}")
    documents = loaded_documents(order, root_path, root_document, dropin_path, imported_texts)
    document = dropin_document(plan, order, documents, dropin_path, runtimes, default_runtime=default_runtime,
                               current_default_runtime=current_default_runtime, imported_texts=imported_texts,
                               cri_settings=cri_settings,
                               settings_name_default=manage_root_config and _sets_default_in(root_settings))
    if plan["errors"]:
        return
    if default_runtime and default_runtime != current_default_runtime and not allow_default_change:
        raise PlanRefused(default_change_error(plan, default_runtime))
    refusals = _unwritable_runtime_errors(runtimes)
    if refusals:
        raise PlanRefused(*refusals)
    plan["files"] = planned_files(root_path, root_text, candidate_root, dropin_path, document)


def root_candidate(root_path, root_text, config_version, import_pattern, *, manage_root_config, root_settings):
    """``(root document, candidate root text)``: owned, rendered whole from ``root_settings`` (its imports and the
    drop-in's pattern); otherwise the node's own file as it is (only an import may be added later)."""
    if manage_root_config:
        settings = {k: v for k, v in (root_settings or {}).items() if k not in ("version", "imports")}
        if config_version >= 4:
            settings = server_settings_for_v4(settings)
        kept_imports = [entry for entry in (root_settings or {}).get("imports", []) if isinstance(entry, str)]
        root_document = {"version": config_version, **settings, "imports": kept_imports + [import_pattern]}
        try:
            return root_document, MANAGED_HEADER + dumps(root_document)
        except TomlWriteError as error:
            raise PlanRefused(f"option root_settings: {error}") from None
    if root_text is None:
        raise PlanRefused(
            f"root config {root_path} does not exist and option manage_root_config is false: "
            "the role edits only a root file that exists (or set manage_root_config to render one)"
        )
    try:
        return tomllib.loads(root_text), root_text
    except tomllib.TOMLDecodeError as error:
        raise PlanRefused(f"root config {root_path} is not valid TOML: {error}") from None


def dropin_version_of(root_path, root_document, config_version, containerd_version):
    """The drop-in's ``version``: the root file's own, never the dump's (§3: mixing versions loses settings)."""
    root_version = root_document.get("version") or 1
    if not isinstance(root_version, int) or isinstance(root_version, bool):
        raise PlanRefused(f"root config {root_path}: version is {root_version!r}, expected an integer")
    if root_version > config_version:
        raise PlanRefused(
            f"root config {root_path} has version = {root_version}, above the {config_version} that containerd "
            f"{containerd_version} reads: 1.6.0-1.6.31/1.7.0-1.7.16 silently ignore its tables, later releases refuse "
            "to start (set option manage_root_config to render a root for this containerd)"
        )
    if root_version < 2:
        raise PlanRefused(
            f"root config {root_path} is version {root_version} (no version key): the drop-in would be version 2 or "
            "later, above the root's version; an unversioned file reads plugins by short ID, so add `version = 2` "
            "(or manage the root config)"
        )
    return root_version


def root_imports_with_dropin(root_path, root_document, candidate_root, dropin_path, import_pattern, *,
                             manage_root_config):
    """``(imports, candidate root text, imports added)``: the root's imports, with ``import_pattern`` appended
    (to the node's own text too) when none of them loads the drop-in."""
    imports = root_document.get("imports") or []
    if not isinstance(imports, list) or not all(isinstance(entry, str) for entry in imports):
        raise PlanRefused(f"root config {root_path}: imports is not an array of strings")
    if any(import_covers(entry, dropin_path) for entry in imports):
        return imports, candidate_root, []
    if not manage_root_config:
        try:
            candidate_root = add_import(candidate_root, import_pattern)
        except TomlWriteError as error:
            raise PlanRefused(f"root config {root_path}: {error}") from None
    return imports + [import_pattern], candidate_root, [import_pattern]


def loaded_documents(order, root_path, root_document, dropin_path, imported_texts):
    """``{path: parsed document}`` of the files in load ``order`` whose text the node sent (the drop-in excluded: it
    is rewritten); refuses with one error per file that is not valid TOML."""
    documents, errors = {}, []
    for path in order:
        if path == root_path:
            documents[path] = root_document
        elif path != dropin_path and path in imported_texts:
            try:
                documents[path] = tomllib.loads(imported_texts[path])
            except tomllib.TOMLDecodeError as error:
                errors.append(f"imported file {path} is not valid TOML: {error}")
    if errors:
        raise PlanRefused(*errors)
    return documents


def dropin_document(plan, order, documents, dropin_path, runtimes, *, default_runtime, current_default_runtime,
                    imported_texts, cri_settings, settings_name_default):
    """The runtime merge: the drop-in's document, the requested runtimes in the CRI table of ``plan``'s version.

    containerd 1.x (config version 2) replaces a plugin's table whole, so the drop-in carries the table loaded
    before it (``_carry_cri_table``, which records its refusals and notes in ``plan``); 2.x merges tables, so the
    drop-in names only the requested runtimes. ``settings_name_default``: a managed root whose root_settings name a
    default names it as an input, so that one is written, not today's.
    """
    requested = {runtime["name"]: runtime_table(runtime) for runtime in runtimes}
    inherits = {runtime["name"] for runtime in runtimes if runtime.get("inherit")}
    if plan["config_version"] == 2:
        return _carry_cri_table(plan, order, documents, dropin_path, requested, default_runtime,
                                None if settings_name_default else current_default_runtime,
                                inherits=inherits, cri_settings=cri_settings)
    # 2.x merges each runtime's table with the earlier files' ones, so a new runtime gets only what the drop-in says:
    # the preset's runtimes start from a copy of runc's table as the files load it, as nvidia-ctk does (_change/inherit).
    requested, sources = with_inherited(requested, merged_file_runtimes(order, documents), inherits=inherits,
                                        default_runtime=current_default_runtime)
    _note_inherited(plan, sources)
    containerd_table = {}
    if default_runtime:
        containerd_table["default_runtime_name"] = default_runtime
    elif current_default_runtime and _sets_default(imported_texts.get(dropin_path)):
        # "Leave it as it is": an earlier run's drop-in set today's default; rewritten without it, it would revert.
        containerd_table["default_runtime_name"] = current_default_runtime
    containerd_table["runtimes"] = requested
    document = {"version": plan["dropin_version"],
                "plugins": {plan["cri_plugin"]: {**(cri_settings or {}), "containerd": containerd_table}}}
    if default_runtime and default_runtime not in requested:
        plan["notes"].append(f"default runtime {default_runtime!r} must come from another file; the dump proves it")
    return document


def planned_files(root_path, root_text, candidate_root, dropin_path, document):
    """The files to write, drop-in first, the root last and only when its text changes."""
    try:
        dropin_text = MANAGED_HEADER + dumps(document)
    except TomlWriteError as error:
        raise PlanRefused(f"drop-in {dropin_path}: {error}") from None
    files = [{"path": dropin_path, "content": dropin_text}]
    if candidate_root != root_text:
        files.append({"path": root_path, "content": candidate_root})
    return files


def _unwritable_runtime_errors(runtimes):
    """One error per requested runtime whose table TOML cannot hold (YAML ``SystemdCgroup:`` left empty is null)."""
    errors = []
    for runtime in runtimes:
        for key, value in (runtime.get("options") or {}).items():
            try:
                dumps({"options": {key: value}})
            except TomlWriteError:
                errors.append(f"option runtimes: runtime {runtime.get('name')!r} option {key!r} is "
                              f"{'null (empty in YAML)' if value is None else repr(value)}, which a TOML file cannot hold; "
                              "give it a value or remove it")
    return errors


def _carry_cri_table(plan, order, documents, dropin_path, requested, default_runtime, current_default_runtime=None,
                     inherits=None, cri_settings=None):
    """containerd 1.x: each file's ``plugins.<id>`` table replaces the earlier one whole (§2), so the
    drop-in carries the complete CRI table loaded before it, with the requested runtimes merged into it."""
    position = order.index(dropin_path)
    shadowing = [path for path in order[position + 1:] if _declares_cri(documents.get(path))]
    if shadowing:
        plan["errors"].append(
            f"{', '.join(shadowing)} is loaded after the drop-in {dropin_path} and declares the CRI plugin: on containerd "
            "1.x it replaces the drop-in's whole CRI table; give the drop-in a name that sorts after it "
            "(option dropin_name) or remove that file's CRI table"
        )
        return None
    sources = [path for path in order[:position] if _declares_cri(documents.get(path))]
    short_keyed = [path for path in sources if "cri" in documents[path]["plugins"]]
    if short_keyed:
        plan["errors"].append(f"{', '.join(short_keyed)} uses the short plugin key [plugins.cri], which a version 2 file rejects")
        return None
    # Every CRI table loaded before the drop-in, merged key by key in load order (later wins, arrays
    # replaced): what the files declare survives even where 1.x itself would have dropped a table.
    # containerd 1.x replaces a plugin's table whole with each later file's (§2): what is loaded before the drop-in is
    # the last source's table, exactly; merging the earlier ones in would bring back settings a later file (nvidia-ctk's
    # 99-nvidia.toml) shadows today, a change the inputs do not name.
    base = copy.deepcopy(documents[sources[-1]]["plugins"][CRI_PLUGIN_V2]) if sources else {}
    # Without a runtimes table of its own, the carried table leaves containerd's built-in runc loaded (a registry-only
    # drop-in shadowing the root's runc): that one is what the node runs today.
    builtin_runc_loaded = not isinstance((base.get("containerd") or {}).get("runtimes"), dict)
    containerd_table = base.setdefault("containerd", {})
    runtimes = containerd_table.setdefault("runtimes", {})
    preserved = sorted(name for name in runtimes if name not in requested)
    merged = sorted(name for name in requested if isinstance(runtimes.get(name), dict))
    # A requested runtime merges into its existing definition: keys the inputs do not name (pod_annotations,
    # SystemdCgroup...) stay loaded, the named ones take the requested value. A new one inheriting (the NVIDIA
    # preset) starts from a copy of runc's table, as nvidia-ctk does (_change/inherit).
    inherited, inherited_from = with_inherited(requested, runtimes, inherits=inherits or set(),
                                               default_runtime=containerd_table.get("default_runtime_name") or BUILTIN_DEFAULT_RUNTIME)
    _note_inherited(plan, inherited_from)
    for name, table in inherited.items():
        existing = runtimes.get(name) if isinstance(runtimes.get(name), dict) else {}
        runtimes[name] = _deep_merge(copy.deepcopy(existing), table)
    base.update(cri_settings or {})
    if default_runtime:
        containerd_table["default_runtime_name"] = default_runtime
    elif current_default_runtime and current_default_runtime in runtimes:
        # No default requested means "leave it as it is": the default loaded today, even when an earlier run of the
        # role set it in the drop-in this table is rebuilt without.
        if (containerd_table.get("default_runtime_name") or BUILTIN_DEFAULT_RUNTIME) != current_default_runtime:
            containerd_table["default_runtime_name"] = current_default_runtime
    effective_default = containerd_table.get("default_runtime_name") or BUILTIN_DEFAULT_RUNTIME
    if effective_default not in runtimes:
        if effective_default != BUILTIN_DEFAULT_RUNTIME:
            plan["errors"].append(
                f"default runtime {effective_default!r} is not defined in the CRI table the drop-in carries"
            )
            return None
        # go-toml v1 builds a fresh map for a present `runtimes` table, dropping the built-in runc (§2). A file that
        # shadows the root's CRI table (nvidia-ctk's drop-in) leaves the node without runc, its CRI plugin failing:
        # the root's own runc definition, where it has one, comes back with its settings (SystemdCgroup).
        # Where the carried table has no runtimes table, the built-in runc is loaded today and is written as it is
        # (planned from what is loaded, not from the shadowed root's definition: that would change runc's options).
        defined = [] if builtin_runc_loaded else [
            documents[path]["plugins"][CRI_PLUGIN_V2].get("containerd", {}).get("runtimes", {}).get(BUILTIN_DEFAULT_RUNTIME)
            for path in sources]
        defined = [table for table in defined if isinstance(table, dict)]
        runtimes[BUILTIN_DEFAULT_RUNTIME] = copy.deepcopy(defined[-1]) if defined else {"runtime_type": DEFAULT_RUNTIME_TYPE}
        plan["restored_runtimes"] = [BUILTIN_DEFAULT_RUNTIME]
        plan["notes"].append("runc is written explicitly: any runtimes table hides the built-in one on 1.x"
                             + (" (its definition taken from the file that a later CRI table shadows)" if defined else
                                " (as containerd's built-in one, which is what is loaded today)" if builtin_runc_loaded and sources
                                else ""))
    plan["notes"].append(
        f"containerd 1.x: the drop-in carries the whole CRI table of {sources[-1] if sources else 'the built-in defaults'}"
        + (f", keeping runtimes {', '.join(preserved)}" if preserved else "")
        + (f"; merged into the existing definition of {', '.join(merged)}" if merged else "")
    )
    plan["carried_from"] = sources[-1:]
    return {"version": 2, "plugins": {CRI_PLUGIN_V2: base}}


def _note_inherited(plan, sources):
    """Records which new runtime copies which (shown as a note; ``plan["inherited"]``)."""
    plan["inherited"] = sources
    by_source = {}
    for name, source in sorted(sources.items()):
        by_source.setdefault(source, []).append(name)
    for source, names in by_source.items():
        plan["notes"].append(f"{', '.join(names)} start from a copy of {source}'s table as the node loads it "
                             "(as nvidia-ctk does); the inputs' keys win")


def _sets_default(text):
    """Whether a drop-in text sets ``default_runtime_name`` (any version's CRI key)."""
    try:
        return _sets_default_in(tomllib.loads(text or ""))
    except tomllib.TOMLDecodeError:
        return False


def _sets_default_in(document):
    plugins = (document or {}).get("plugins") or {}
    return isinstance(plugins, dict) and any(
        isinstance(table, dict) and isinstance(table.get("containerd"), dict) and "default_runtime_name" in table["containerd"]
        for table in plugins.values())


def _deep_merge(into, table):
    for key, value in table.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _deep_merge(into[key], value)
        else:
            into[key] = copy.deepcopy(value)
    return into


def restore_plan(written, failed_result=None):
    """What to put back after the role's ``copy`` loop (registered as ``written``) or a later step failed.

    Returns ``{"restore": [{"path", "backup" (the copy's backup file, or None), "delete"}], "failure_msg"}``:
    a file with a backup is restored from it (and the backup then dropped); a file the loop created (changed,
    no backup) is deleted; an unchanged one is left alone. ``failure_msg`` (only with ``failed_result``, the
    failed task's result, a loop's or a single task's) says why writing failed; None otherwise.
    """
    restore = []
    results = written.get("results") if isinstance(written, dict) else None
    for result in results if isinstance(results, list) else ():
        item = result.get("item") if isinstance(result, dict) else None
        path = item.get("path") if isinstance(item, dict) else None
        if not path:
            continue
        # The role backs a file up before writing it (``item.backup``, outside every import pattern); results of copy's
        # own ``backup: true`` (``backup_file``) are still read.
        backup = item.get("backup") or result.get("backup_file")
        if backup and result.get("changed"):
            restore.append({"path": path, "backup": backup, "delete": False})
        elif result.get("changed"):
            restore.append({"path": path, "backup": None, "delete": True})
    failure_msg = None
    if isinstance(failed_result, dict) and failed_result:
        failed = failed_result.get("results") if isinstance(failed_result.get("results"), list) else [failed_result]
        reasons = [str(result.get("msg")) for result in failed if isinstance(result, dict) and result.get("failed")]
        failure_msg = "containerd_runtimes: writing the proven files failed, every file written was restored: " + "; ".join(reasons)
    return {"restore": restore, "failure_msg": failure_msg}
