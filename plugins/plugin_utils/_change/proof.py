# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The proof of a plan from ``_change/render``: the candidate tree the node dumps, and the judgement of that dump.

Controller side. ``candidate_tree`` says what the node writes into its temp dir (``_node/candidate`` writes and dumps
it); ``prove_candidate`` judges what the node answered: the imports matched, the real ``containerd config dump``
printed it, and ``judge_candidate`` reads that dump (parsed once) with the core (``facts_from_document``,
``served_runtimes``) and against the node's current one.
"""

import dataclasses
import posixpath
import tomllib

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.containerd_config import (
    BUILTIN_DEFAULT_RUNTIME,
    CRI_PLUGIN_V2,
    CRI_RUNTIME_PLUGIN_V3,
    facts_from_document,
    root_config_summary,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.candidate import PLACEHOLDER
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.loaded_config import LoadedConfig
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.loaded_config_diff import differences, named_by_plan
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.render import default_change_error
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.toml_write import set_imports
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._verdict import served_runtimes


def _set_options(options):
    """Options that say something: containerd's built-in runc prints every runc option, unset ones as zero values."""
    return {key: value for key, value in (options or {}).items() if value not in ("", 0, False, None, [], {})}


def judge_candidate(plan, candidate, *, current_facts=None, current=None, root_setting_paths=(), containerd_version=None,
                    root_text=None, base_runtime_specs=None):
    """Errors (empty: proven) for the real ``config dump`` of the candidate tree, ``candidate``
    (``_change/loaded_config.LoadedConfig``); ``current`` is the node's current one (None: it does not load or was
    not judged) and ``current_facts`` its facts.

    First: containerd and its CRI plugin start with it (``_facts/daemon_startup``, ``_facts/cri_startup``; docs/cri-startup.md),
    judged for ``containerd_version`` (the node's), with the candidate root's own version (``root_text``) and the node's
    evidence on the ``base_runtime_spec`` files the candidate names (``base_runtime_specs``, ``_node/base_specs``; None:
    not looked at, which fails a candidate naming one). What cannot be decided fails the proof: nothing is restarted
    on a guess.

    Required: every requested runtime loaded and served with its runtime_type and options, the
    requested default runtime in force, the loaded default equal to today's unless the plan allows a
    change (an unknown default today counts as a change), and every runtime served today still served with the options
    it has today (so runc's SystemdCgroup and the node's other runtimes survive).
    """
    try:
        facts = facts_from_document(candidate.document, source="command", source_name=candidate.source_name,
                                    version_text=containerd_version, version_source="the node's `containerd --version`",
                                    root_config=None if root_text is None else root_config_summary(root_text, "the candidate root"),
                                    base_runtime_specs=base_runtime_specs)
    except RuntimeGateError as error:
        return [str(error)], None
    errors = [f"whether containerd starts with the candidate is not proven: {line}"
              for line in facts["daemon_startup"]["undecided"]]
    if facts["cri_startup"]["undecided"]:
        errors.append(f"whether the CRI plugin starts with the candidate is not proven: {facts['cri_startup']['undecided']}")
    served, not_served = served_runtimes(facts)
    if not_served:
        errors.append(f"the candidate would serve no runtime: {not_served}")
    loaded = facts["runtimes"]
    for name, table in plan["expected"]["runtimes"].items():
        if name not in loaded:
            errors.append(f"MISSING={name}: the candidate configuration does not load runtime {name!r}")
            continue
        if loaded[name]["runtime_type"] != table["runtime_type"]:
            errors.append(f"runtime {name!r} loads with runtime_type {loaded[name]['runtime_type']!r}, not {table['runtime_type']!r}")
        for key, value in (table.get("options") or {}).items():
            if loaded[name]["options"].get(key) != value:
                errors.append(f"runtime {name!r} loads with options.{key} = {loaded[name]['options'].get(key)!r}, not {value!r}")
    wanted_default = plan["expected"]["default_runtime"]
    if wanted_default and facts["default_runtime_name"] != wanted_default:
        errors.append(f"the candidate's default_runtime_name is {facts['default_runtime_name']!r}, not {wanted_default!r}")
    # The loaded default, whatever set it (default_runtime, root_settings of a managed root, a carried table).
    candidate_default = facts["default_runtime_name"] or BUILTIN_DEFAULT_RUNTIME
    if candidate_default != plan.get("current_default_runtime") and not plan.get("allow_default_change"):
        errors.append(default_change_error(plan, candidate_default))
    if current_facts:
        plan["repaired_runtimes"] = [name for name in plan.get("restored_runtimes") or () if name not in current_facts["runtimes"]]
        current_served, _reason = served_runtimes(current_facts)
        for name in current_served:
            if name in plan["expected"]["runtimes"]:
                continue
            if name not in served:
                errors.append(f"runtime {name!r} is served today and would not be after the change")
            elif _set_options(loaded[name]["options"]) != _set_options(current_facts["runtimes"][name]["options"]):
                errors.append(f"runtime {name!r} would change its options from "
                              f"{_set_options(current_facts['runtimes'][name]['options'])} to {_set_options(loaded[name]['options'])}, "
                              "which the inputs do not name")
    if current is not None:
        # Nothing the node loads today may change unless the inputs name it: every key, not only the runtimes.
        named = named_by_plan(plan, (CRI_PLUGIN_V2, CRI_RUNTIME_PLUGIN_V3), root_setting_paths)
        changed = differences(current, candidate, named=named)
        errors.extend(f"the loaded configuration would change {line}, which the inputs do not name" for line in changed)
        newly_loaded = _newly_loaded_files(plan, current)
        if changed and newly_loaded:
            errors.append(f"not loaded today and loaded after the change (the import it adds catches them): "
                          f"{', '.join(newly_loaded)}; move them out of the drop-in directory or load them first")
    return errors, facts


def _newly_loaded_files(plan, current):
    """The files the candidate loads that the node does not load today and the plan does not write."""
    loaded_today = set(current.imports)
    written = {item["path"] for item in plan["files"]}
    return [path for path in plan["load_order"][1:] if path not in loaded_today and path not in written]


def candidate_tree(plan, *, root_path, root_text, dropin_dir, existing_paths):
    """What the node writes into its temp dir to dump the candidate (``@@CANDIDATE@@`` = that dir).

    Files under the root's directory and the drop-in directory are mirrored at ``@@CANDIDATE@@<path>``:
    the planned files with their new text, the other files the imports load copied from the node
    (``existing_paths``). Import entries pointing into those directories are rewritten to the mirror, so
    the real binary loads the tree exactly as it will be, and the files in place stay untouched.
    Returns ``{"config_path", "files", "copy_files", "patterns", "dropin_paths"}``.
    """
    mirrored = tuple(directory.rstrip("/") + "/" for directory in sorted({posixpath.dirname(root_path), dropin_dir}))

    def mirror(path):
        return PLACEHOLDER + path if path.startswith(mirrored) else path

    planned = {item["path"]: item["content"] for item in plan["files"]}
    candidate_root = planned.get(root_path, root_text)
    imports = tomllib.loads(candidate_root).get("imports") or []
    mapped_imports = [mirror(entry) if entry.startswith("/") else entry for entry in imports]
    files = {PLACEHOLDER + root_path: set_imports(candidate_root, mapped_imports)}
    copy_files = {}
    for path in plan["load_order"][1:]:
        if mirror(path) == path:
            continue
        if path in planned:
            files[mirror(path)] = planned[path]
        elif path in existing_paths:
            copy_files[mirror(path)] = path
    return {
        "config_path": PLACEHOLDER + root_path,
        "files": files,
        "copy_files": copy_files,
        "imports": mapped_imports,
        "patterns": [entry for entry in mapped_imports if "*" in entry],
        "dropin_paths": [mirror(path) for path in planned if path != root_path],
    }


def unmatched_dropins(tree, globs):
    """Planned drop-ins that no import glob matched in the candidate tree (Go Glob, run on the node)."""
    matched = {path for paths in globs.values() for path in paths}
    matched.update(entry for entry in tree["imports"] if "*" not in entry)
    return [path for path in tree["dropin_paths"] if path not in matched]


@dataclasses.dataclass
class Proof:
    """``prove_candidate``'s answer: ``refusal`` (None: proven) and whether the default-runtime guard lines go with it;
    the candidate's dump (``candidate``, a ``LoadedConfig``) and ``facts`` once proven."""

    refusal: str = None
    with_guard_lines: bool = False
    candidate: LoadedConfig = None
    facts: dict = None


def prove_candidate(planned, tree, validated, current, *, containerd_version):
    """The proof of ``planned`` (``_change/planner.PlannedChange``) from the node's answer ``validated`` for the
    candidate ``tree``; ``current`` is ``_change/outcome.current_state``."""
    unmatched = unmatched_dropins(tree, validated.get("globs") or {})
    if unmatched or validated.get("glob_errors"):
        return Proof(refusal="no import of the candidate root config matches " + ", ".join(unmatched)
                     + "".join("; " + error for error in validated.get("glob_errors") or []))
    dumped = validated["dump"]
    if dumped.get("rc") != 0:
        return Proof(refusal=f"containerd {containerd_version} rejects the candidate configuration (`config dump` exit "
                             f"{dumped.get('rc')}): {dumped.get('stderr')}")
    plan = planned.plan
    try:
        candidate = LoadedConfig(dumped["stdout"], "the candidate's `config dump`")
    except RuntimeGateError as error:
        errors, facts = [str(error)], None
    else:
        errors, facts = judge_candidate(plan, candidate, current_facts=current["facts"], current=current["loaded"],
                                        root_setting_paths=planned.root_setting_paths, containerd_version=containerd_version,
                                        root_text=tree["files"][tree["config_path"]],
                                        base_runtime_specs=validated.get("base_runtime_specs"))
    if errors:
        return Proof(refusal="the candidate configuration fails its proof, nothing was written:\n"
                             + "\n".join(errors + plan["guard_lines"]), with_guard_lines=True)
    return Proof(candidate=candidate, facts=facts)
