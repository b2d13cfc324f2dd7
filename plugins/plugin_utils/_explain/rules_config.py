"""Host rules about files: imports that load nothing or the wrong thing, and config versions containerd drops.

Pure controller-side functions over a ``HostContext``; see ``_explain/host_rules`` for the runtime and daemon rules.
Version gates are the reference's (docs/containerd-loading.md), inclusive on both ends.
"""

import os

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.config_files import CRI_SHORT_ID, directory_of
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.containerd_config import CRI_PLUGIN_V2, CRI_RUNTIME_PLUGIN_V3
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.goglob import GlobPatternError, match
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.containerd_release import between
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._explain.finding_codes import ERROR, WARNING, make_finding
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._explain.host_context import (
    listings,
    relative_globs_from_cwd,
    severity,
    toml_key,
)

# containerd 2.2.0+ adds this pattern to the built-in default's imports, which LoadConfig never follows
# (PR #12323; docs/containerd-loading.md §4): the root file must list it itself.
DEFAULT_CONFD_PATTERN = "/etc/containerd/conf.d/*.toml"
DROPIN_SUFFIXES = (".toml", ".conf")


# -------------------------------------------------------------------------------------- imports


def _dropin_dirs(context):
    return listings(context.facts.get("dropin_dirs"))


def _imports_line(context, path):
    for config_file in context.files or ():
        if config_file.path == path:
            return config_file.line_of("imports")
    return None


def import_rules(context):
    findings = []
    dropin_listings = _dropin_dirs(context)
    for expansion in context.import_globs:
        if "*" not in expansion["pattern"] or expansion["error"]:
            continue
        directory = directory_of(expansion["resolved_pattern"])
        in_directory = [entry["name"] for entry in dropin_listings.get(directory) or () if entry.get("is_file")]
        if not expansion["matches"]:
            loaded_paths = {config_file.path for config_file in context.loaded_files}
            handlers = context.missing_in_unloaded(
                [path for path in (os.path.join(directory, name) for name in in_directory) if path not in loaded_paths])
            findings.append(make_finding(
                "IMPORT_GLOB_MATCHES_NOTHING", severity(handlers),
                f"imports pattern {expansion['pattern']!r} in {expansion.get('declared_in')} matches no file, "
                "so containerd loads nothing from it and says nothing.",
                "Change the pattern to match the drop-in files (Go filepath.Glob: `*` stays within one directory), "
                "or rename the files to match it.",
                context.evidence(file=expansion["declared_in"], line=_imports_line(context, expansion["declared_in"]),
                                 key="imports", pattern=expansion["pattern"], directory=directory, files_in_directory=in_directory),
                handlers,
            ))
        if not expansion["absolute"] and relative_globs_from_cwd(context.version):
            from_cwd = expansion["matches_from_cwd"] or []
            lost = sorted(set(expansion["matches"]) - set(from_cwd))
            handlers = context.missing_defined_in(lost)
            findings.append(make_finding(
                "RELATIVE_IMPORT_GLOB", severity(handlers),
                f"containerd {context.version_text} resolves the relative imports glob {expansion['pattern']!r} from the "
                f"daemon's working directory ({expansion['cwd'] or '/'}), not from {os.path.dirname(expansion['declared_in'] or '') or 'its file'}.",
                "Write the imports pattern as an absolute path, or upgrade containerd to 1.6.29+/1.7.16+.",
                context.evidence(file=expansion["declared_in"], line=_imports_line(context, expansion["declared_in"]),
                                 key="imports", pattern=expansion["pattern"], matches=expansion["matches"],
                                 matches_from_cwd=list(from_cwd)),
                handlers,
            ))
    findings.extend(_unimported_dropins(context, dropin_listings))
    return findings


def _unimported_dropins(context, dropin_listings):
    findings = []
    loaded_paths = {config_file.path for config_file in context.loaded_files}
    patterns = [expansion["resolved_pattern"] for expansion in context.import_globs]
    default_confd = context.at_least((2, 2, 0)) is True
    for directory, entries in sorted(dropin_listings.items()):
        targeting = [pattern for pattern in patterns if directory_of(pattern) == directory]
        for entry in entries or ():
            path = os.path.join(directory, entry["name"])
            if not entry.get("is_file") or path in loaded_paths or _matched_by_any(targeting, path):
                continue
            confd = default_confd and not targeting and _matched_by_any([DEFAULT_CONFD_PATTERN], path)
            if not confd and not entry["name"].endswith(DROPIN_SUFFIXES):
                continue
            handlers = context.missing_in_unloaded([path])
            evidence = context.evidence(file=path, directory=directory, patterns=targeting, size=entry.get("size"))
            if confd:
                root = (context.files or [None])[0]
                evidence.update(root=root.path if root else None, key="imports", default_pattern=DEFAULT_CONFD_PATTERN)
                findings.append(make_finding(
                    "CONFD_NOT_IMPORTED", severity(handlers),
                    f"{path} is in containerd's default drop-in directory, but the root config does not import it: "
                    f"containerd {context.version_text} loads conf.d only when the root file lists it (the dump shows the "
                    "pattern either way).",
                    f"Add imports = [{DEFAULT_CONFD_PATTERN!r}] at the top of the root config (before any table).",
                    evidence, handlers,
                ))
            else:
                findings.append(make_finding(
                    "DROPIN_NOT_IMPORTED", severity(handlers),
                    f"{path} is in a drop-in directory but no imports pattern matches it"
                    + (f" ({', '.join(targeting)})" if targeting else " (no pattern points at that directory)") + ".",
                    "Rename the file to match an imports pattern, or add a pattern that matches it to the root config's imports.",
                    evidence, handlers,
                ))
    return findings


def _matched_by_any(patterns, path):
    for pattern in patterns:
        try:
            if match(pattern, path):
                return True
        except GlobPatternError:
            continue
    return False


# -------------------------------------------------------------------------------------- versions


def version_rules(context):
    if context.major is None or not context.loaded_files:
        return []
    if context.major == 1:
        return _v3_on_1x(context) + _cri_table_replaced(context) + _root_cri_setting_shadowed(context) + _uri_keys_in_v1_config(context)
    return _legacy_plugin_key(context) + _mixed_versions(context)


def _v3_on_1x(context):
    findings = []
    merged_version = 0
    for config_file in context.loaded_files:
        merged_version = config_file.version or merged_version
    # 1.6.32+/1.7.17+ refuse version 3 — but only when the merged (last non-zero) version is 3 (PRs #10234,
    # #10165); earlier releases accept it as version 2 and ignore the 2.x-only tables (docs/containerd-loading.md §3).
    # With only the family known (a dump judged by itself), the dump loaded, so this containerd did not refuse it.
    refusing = context.version is not None and (context.version >= (1, 7, 17) or between(context.version, (1, 6, 32), (1, 6, 999)))
    for config_file in context.loaded_files:
        if config_file.version < 3:
            findings.extend(_v2x_table_on_1x(context, config_file))
            continue
        refused = refusing and merged_version >= 3
        handlers = list(context.missing) if refused else [
            handler for handler in context.missing if handler in config_file.runtimes(CRI_RUNTIME_PLUGIN_V3)]
        outcome = "refuses to start" if refused else "accepts the file and ignores its 2.x-only tables"
        findings.append(make_finding(
            "V3_CONFIG_ON_1X", ERROR if refused else severity(handlers),
            f"{config_file.path} says version = {config_file.version}, a containerd 2.x format: containerd "
            f"{context.version_text} {outcome}.",
            "Write this file as version = 2 with runtimes under plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes, "
            "or upgrade containerd to 2.x.",
            context.evidence(file=config_file.path, line=config_file.line_of("version"), key="version",
                             config_version=config_file.version, outcome="refused" if refused else "ignored",
                             ignored_runtimes=sorted(config_file.runtimes(CRI_RUNTIME_PLUGIN_V3))),
            handlers,
        ))
    return findings


def _v2x_table_on_1x(context, config_file):
    # 1.x registers no plugin named io.containerd.cri.v1.runtime (it arrived with the CRI split, PR #9141, 2.0): its
    # tables are decoded by nothing, whatever the file's version (found by the differential tests on 1.6.20, 1.7.35).
    legacy = sorted(config_file.runtimes(CRI_RUNTIME_PLUGIN_V3))
    if not legacy:
        return []
    handlers = [handler for handler in context.missing if handler in legacy]
    key = toml_key("plugins", CRI_RUNTIME_PLUGIN_V3, "containerd", "runtimes")
    return [make_finding(
        "V3_CONFIG_ON_1X", severity(handlers),
        f"{config_file.path} defines runtime(s) {', '.join(legacy)} under {key}, a containerd 2.x table: containerd "
        f"{context.version_text} has no such plugin and ignores it.",
        "Write these runtimes under plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes (version = 2), "
        "or upgrade containerd to 2.x.",
        context.evidence(file=config_file.path, line=config_file.line_of("plugins", CRI_RUNTIME_PLUGIN_V3, "containerd", "runtimes"),
                         key=key, config_version=config_file.version or None, outcome="ignored", ignored_runtimes=legacy),
        handlers,
    )]


def _cri_table_replaced(context):
    # containerd 1.x merges files by replacing each top-level plugins.<key> table wholesale
    # (mergeConfig @v1.6.20/@v1.7.34, docs/containerd-loading.md §2): whatever an earlier file set there is gone.
    findings = []
    for plugin_key in (CRI_PLUGIN_V2, CRI_SHORT_ID):
        previous = None
        for config_file in context.loaded_files:
            table = config_file.plugin_table(plugin_key)
            if table is None:
                continue
            if previous is not None:
                dropped = sorted(_leaf_paths(previous.plugin_table(plugin_key)) - _leaf_paths(table))
                if dropped:
                    findings.append(_replaced_finding(context, plugin_key, previous, config_file, dropped))
            previous = config_file
    return findings


def _root_cri_setting_shadowed(context):
    # 1.x: the last file declaring the CRI table wins it whole (§2). A drop-in that carries the root's CRI table (the
    # containerd_runtimes role's, 1.x) hides every later edit of the root's CRI settings by kubeadm, kubespray or
    # nvidia-ctk: the root says one value, containerd keeps loading the drop-in's.
    files = context.loaded_files
    if not files or files[0].plugin_table(CRI_PLUGIN_V2) is None:
        return []
    root = files[0]
    winner = next((config_file for config_file in reversed(files[1:]) if config_file.plugin_table(CRI_PLUGIN_V2) is not None), None)
    if winner is None:
        return []
    root_values, winner_values = _leaf_values(root.plugin_table(CRI_PLUGIN_V2)), _leaf_values(winner.plugin_table(CRI_PLUGIN_V2))
    shadowed = sorted(path for path in root_values if path in winner_values and root_values[path] != winner_values[path])
    if not shadowed:
        return []
    key = toml_key("plugins", CRI_PLUGIN_V2)
    return [make_finding(
        "ROOT_CRI_SETTING_SHADOWED", WARNING,
        f"{root.path} sets {', '.join(shadowed[:5])}{' ...' if len(shadowed) > 5 else ''} in {key}, but {winner.path} "
        f"declares that table too and containerd {context.version_text} loads its value instead: an edit of the root's "
        "CRI settings (kubeadm, kubespray, nvidia-ctk) does not take effect.",
        f"Make the same edit in {winner.path}, or run the containerd_runtimes role again so its drop-in carries the root's new values.",
        context.evidence(file=winner.path, line=winner.line_of("plugins", CRI_PLUGIN_V2), key=key, root=root.path,
                         shadowed_settings=shadowed[:20]),
        [],
    )]


def _leaf_values(table, prefix=()):
    values = {}
    for key, value in (table or {}).items():
        if isinstance(value, dict) and value:
            values.update(_leaf_values(value, prefix + (key,)))
        else:
            values[".".join(prefix + (key,))] = value
    return values


def _replaced_finding(context, plugin_key, previous, config_file, dropped):
    dropped_runtimes = sorted(set(previous.runtimes(plugin_key)) - set(config_file.runtimes(plugin_key)))
    handlers = [handler for handler in context.missing if handler in dropped_runtimes]
    if context.default_runtime in dropped_runtimes and context.cri_broken():
        handlers = list(context.missing)  # the default runtime went with the table: the whole CRI plugin failed
    return make_finding(
        "CRI_TABLE_REPLACED", severity(handlers),
        f"{config_file.path} defines part of {toml_key('plugins', plugin_key)}, and containerd {context.version_text} replaces that whole "
        f"table per file, so the settings of {previous.path} there are dropped"
        + (f", including runtime(s) {', '.join(dropped_runtimes)}." if dropped_runtimes else "."),
        f"Repeat the complete {toml_key('plugins', plugin_key)} table (every runtime and setting) in {config_file.path}, "
        "or keep the CRI settings in one file.",
        context.evidence(file=config_file.path, line=config_file.line_of("plugins", plugin_key), key=toml_key("plugins", plugin_key),
                         replaced_file=previous.path, dropped_runtimes=dropped_runtimes, dropped_settings=dropped[:20]),
        handlers,
    )


def _leaf_paths(table, prefix=()):
    paths = set()
    for key, value in (table or {}).items():
        if isinstance(value, dict) and value:
            paths |= _leaf_paths(value, prefix + (key,))
        else:
            paths.add(".".join(prefix + (key,)))
    return paths


def _legacy_plugin_key(context):
    # 2.0–2.2: an unversioned file is stamped with the version so far (3 unless an earlier file said 2)
    # and only a merged version < 3 is migrated; 2.3+ migrates every file < 4 separately (PR #12608), so
    # only version = 4 files lose io.containerd.grpc.v1.cri runtimes (docs/containerd-loading.md §3).
    findings = []
    accumulated = 3
    remedy = (f"Move the runtimes to {toml_key('plugins', CRI_RUNTIME_PLUGIN_V3, 'containerd', 'runtimes')}, "
              "or declare the file version = 2 so containerd migrates it.")
    for config_file in context.loaded_files:
        effective = config_file.version or accumulated
        if config_file.version:
            accumulated = config_file.version
        per_file_migration = context.at_least((2, 3, 0))
        if effective >= (4 if per_file_migration else 3):
            for plugin_key in (CRI_PLUGIN_V2, CRI_SHORT_ID):
                findings.extend(_legacy_finding(context, config_file, plugin_key, "ignores for this config version", remedy))
        elif _new_key_runtimes_beside(context, config_file, per_file_migration):
            # The migration copies an old key only where the new table lacks it, containerd.runtimes as a whole (PR
            # #10980, 2.0.2+; migrateConfig in plugins/cri/runtime/plugin.go @v2.2.9): runtimes under the new key in
            # the same migration (the file on 2.3+, which migrates each file; the merged config before) win.
            for plugin_key in (CRI_PLUGIN_V2, CRI_SHORT_ID):
                findings.extend(_legacy_finding(
                    context, config_file, plugin_key,
                    f"drops while migrating, because {toml_key('plugins', CRI_RUNTIME_PLUGIN_V3, 'containerd', 'runtimes')} "
                    "is set too and only an absent table is copied", remedy))
    return findings


def _new_key_runtimes_beside(context, config_file, per_file_migration):
    scope = [config_file] if per_file_migration else context.loaded_files
    return any(other.runtimes(CRI_RUNTIME_PLUGIN_V3) for other in scope)


def _uri_keys_in_v1_config(context):
    # 1.x: a merged config without a version is version 1, whose plugin tables are looked up by short ID
    # (plugins.cri, Decode @v1.6.20): URI-keyed tables are ignored without a word (docs/containerd-loading.md §3).
    merged_version = ([config_file.version for config_file in context.loaded_files if config_file.version] or [0])[-1]
    if merged_version > 1:
        return []
    remedy = "Add version = 2 at the top of the root config (a version 1 config reads only plugins.cri)."
    findings = []
    for config_file in context.loaded_files:
        findings.extend(_legacy_finding(context, config_file, CRI_PLUGIN_V2, "ignores in a version 1 (unversioned) config", remedy))
    return findings


def _legacy_finding(context, config_file, plugin_key, what, remedy):
    legacy = sorted(config_file.runtimes(plugin_key))
    if not legacy:
        return []
    handlers = [handler for handler in context.missing if handler in legacy]
    return [make_finding(
        "LEGACY_PLUGIN_KEY", severity(handlers),
        f"{config_file.path} ({f'version = {config_file.version}' if config_file.version else 'unversioned'}) defines "
        f"runtime(s) {', '.join(legacy)} under {toml_key('plugins', plugin_key)}, which containerd {context.version_text} {what} "
        "(a warning in the journal at most).",
        remedy,
        context.evidence(file=config_file.path, line=config_file.line_of("plugins", plugin_key, "containerd", "runtimes"),
                         key=toml_key("plugins", plugin_key, "containerd", "runtimes"), config_version=config_file.version or None,
                         runtimes=legacy),
        handlers,
    )]


def _mixed_versions(context):
    root = context.loaded_files[0]
    if root.role != "root" or not root.version:
        return []
    findings = []
    for config_file in context.loaded_files[1:]:
        if not config_file.version or config_file.version == root.version:
            continue
        newer = config_file.version > root.version
        evidence = context.evidence(file=config_file.path, line=config_file.line_of("version"), key="version",
                                    config_version=config_file.version, root=root.path, root_version=root.version)
        if between(context.version, (2, 3, 0), (2, 3, 4)) and newer:
            # PR #12891 (2.3.0–2.3.4): "drop-in config version N higher than root config version M".
            findings.append(make_finding(
                "MIXED_CONFIG_VERSIONS", ERROR,
                f"{config_file.path} is version {config_file.version}, newer than the root's version {root.version}: "
                f"containerd {context.version_text} refuses to start.",
                f"Write {config_file.path} as version {root.version}, or raise the root config to version {config_file.version}.",
                evidence, list(context.missing),
            ))
        elif context.at_least((2, 3, 0)) is False:
            if newer:
                lost = root.runtimes(CRI_PLUGIN_V2)
                what = f"the merged version becomes {config_file.version}, no CRI migration runs and the root's CRI settings are ignored"
            else:
                lost = config_file.runtimes(CRI_PLUGIN_V2) if root.runtimes(CRI_RUNTIME_PLUGIN_V3) else {}
                what = "the drop-in's runtimes under the old CRI key are dropped because the root already defines runtimes"
            handlers = [handler for handler in context.missing if handler in lost]
            findings.append(make_finding(
                "MIXED_CONFIG_VERSIONS", severity(handlers),
                f"{root.path} is version {root.version} but {config_file.path} is version {config_file.version}: on containerd "
                f"{context.version_text} {what}.",
                "Give the root and every drop-in the same config version (containerd config migrate converts a file).",
                dict(evidence, lost_runtimes=sorted(lost)), handlers,
            ))
    return findings
