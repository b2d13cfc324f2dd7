# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The change planner of containerd_runtime_config: what to write and why, from the task's options and what the node
sent (``_node/config_tree``). Controller side, pure; the action only calls it and the node.

``change_request`` makes the options ready to plan and refuses bad ones before the node is read; ``probe_options``
says what the node must read; ``plan_change`` renders the files (``_change/render``), applies the crosscheck's
rules to them (``_change/checks``, ``_change/links``), decides modes and backups (``_change/files``) and collects
every reason not to go on in ``plan["errors"]``; ``record_pending_edits`` adds the edits the running daemon has not
loaded (``_change/pending``). The proof of the candidate is ``_change/proof.prove_candidate``.
"""

import dataclasses
import posixpath
import tomllib

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.binaries import shim_binary_name
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.checks import cdi_setting, runtime_problems
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.files import (
    DEFAULT_DROPIN_NAME,
    backup_dir_for,
    dropin_name_for,
    plan_backups,
    set_file_modes,
)
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.inputs import expand_runtimes
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.links import link_errors
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.loaded_config_diff import leaves
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.pending import pending_edits, refusal, unaccepted
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.render import input_errors, make_plan
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.containerd_config import CRI_PLUGIN_V2, CRI_RUNTIME_PLUGIN_V3

DEFAULT_RUNTIME_TYPE = "io.containerd.runc.v2"
# Paths containerd deduplicates imports by exact string and Go's Glob returns cleaned: written clean.
_CLEANED_PATHS = ("config_path", "dropin_dir", "import_pattern", "backup_dir")


def change_request(args):
    """``(request, refusal)``: the validated options with paths cleaned, runtimes expanded (``_change/inputs``), the
    import pattern and backup directory decided; or the message refusing them before the node is read (the first
    probe globs the import pattern and reads what it matches)."""
    request = dict(args)
    for name in _CLEANED_PATHS:
        if request[name] and request[name].startswith("/"):
            request[name] = posixpath.normpath(request[name])
    request["runtimes"] = expand_runtimes(args["runtimes"], presets=args["presets"],
                                          nvidia_binary_dir=args["nvidia_binary_dir"], config_path=request["config_path"])
    request["import_pattern"] = request["import_pattern"] or posixpath.join(request["dropin_dir"], "*.toml")
    request["backup_dir"] = backup_dir_for(request["backup_dir"], request["dropin_dir"])
    if not request["runtimes"]:
        return None, "option runtimes is empty and option presets chooses none: there is nothing to give the node"
    refused = input_errors(root_path=request["config_path"], runtimes=request["runtimes"], dropin_dir=request["dropin_dir"],
                           dropin_name=request["dropin_name"] or DEFAULT_DROPIN_NAME, import_pattern=request["import_pattern"])
    if refused:
        return None, "\n".join(refused)
    return request, None


def _shims(runtimes):
    """``{shim binary name: runtime}`` of the runtimes' types."""
    return {shim_binary_name(runtime.get("runtime_type") or DEFAULT_RUNTIME_TYPE): runtime for runtime in runtimes}


def probe_options(request):
    """What the node reads before the plan (containerd_runtime_config_probe, ``mode: gather``)."""
    binary_names = [runtime["binary_name"] for runtime in request["runtimes"] if runtime.get("binary_name")]
    return {"mode": "gather", "config_path": request["config_path"], "patterns": [request["import_pattern"]],
            "write_paths": [posixpath.join(request["dropin_dir"], DEFAULT_DROPIN_NAME), request["config_path"]],
            "binaries": binary_names + [shim for shim in _shims(request["runtimes"]) if shim],
            "list_dirs": [request["backup_dir"]], "containerd_bin": request["containerd_bin"], "timeout": request["timeout"]}


@dataclasses.dataclass
class PlannedChange:
    """The planner's answer. ``plan`` is what the result shows (``_change/render``'s plan with each file's
    ``changed``, mode, owner and backup); the rest says how the change goes on."""

    plan: dict
    warnings: list
    # Old backups to remove after the change (``_change/files.plan_backups``).
    prune: list
    # Keys of the loaded configuration the inputs name beyond the runtimes: root settings, the CDI switch.
    root_setting_paths: list

    @property
    def writes(self):
        """Whether a file changes (and the plan is worth proving)."""
        return any(item["changed"] for item in self.plan["files"])


def plan_change(request, gathered, current, *, stamp):
    """The plan for the node that sent ``gathered`` and is ``current`` (``_change/outcome.current_state``);
    ``stamp`` names this run's backups."""
    root_path, texts = request["config_path"], gathered.get("texts") or {}
    loaded_paths = {path for paths in (gathered.get("globs") or {}).values() for path in paths}
    dropin_name = dropin_name_for(request["dropin_name"], request["dropin_dir"], loaded_paths)
    cri_settings, cdi_errors, cdi_warnings = cdi_setting(current["version"], request["enable_cdi"])
    plan = make_plan(
        root_path=root_path, root_text=gathered.get("root_text"), containerd_version=current["version"],
        runtimes=request["runtimes"], dropin_dir=request["dropin_dir"], dropin_name=dropin_name,
        import_pattern=request["import_pattern"], manage_root_config=request["manage_root_config"],
        root_settings=request["root_settings"], default_runtime=request["default_runtime"],
        allow_default_change=request["allow_default_change"], current_default_runtime=current["default_runtime"],
        glob_matches=gathered.get("globs") or {}, imported_texts=texts, cri_settings=cri_settings,
    )
    plan["notes"] = current["notes"] + plan["notes"]
    if dropin_name != (request["dropin_name"] or DEFAULT_DROPIN_NAME):
        plan["notes"].append(f"the drop-in is named {dropin_name} to load after nvidia-ctk's 99-nvidia.toml "
                             "(on containerd 1.x the later file's CRI table replaces the earlier one whole)")
    found_binaries = gathered.get("binaries") or {}
    missing = {("shim", runtime.get("runtime_type") or DEFAULT_RUNTIME_TYPE): f"{shim} is {found_binaries[shim]}"
               for shim, runtime in _shims(request["runtimes"]).items() if shim and found_binaries.get(shim)}
    type_errors, warnings = runtime_problems(plan["expected"]["runtimes"], missing)
    plan["errors"].extend(cdi_errors + type_errors)
    for runtime in request["runtimes"]:
        reason = found_binaries.get(runtime.get("binary_name") or "")
        if reason:
            plan["errors"].append(f"runtime {runtime['name']!r}: BinaryName {runtime['binary_name']!r} is {reason}: "
                                  "containerd would load the runtime but no pod could start with it")
    stats = gathered.get("stats") or {}
    for item in plan["files"]:
        item["changed"] = texts.get(item["path"]) != item["content"]
        reason = (gathered.get("writable") or {}).get(item["path"])
        if item["changed"] and reason:
            plan["errors"].append(f"cannot write {item['path']}: {reason}")
    plan["errors"].extend(link_errors([item for item in plan["files"] if item["changed"]], root_path=root_path,
                                      realpaths=gathered.get("realpaths") or {}))
    set_file_modes(plan, stats, root_path=root_path)
    existing_paths = set(texts) | {root_path} if gathered.get("root_text") is not None else set(texts)
    backup_errors, prune = plan_backups(plan, backup_dir=request["backup_dir"], stamp=stamp, existing_paths=existing_paths,
                                        import_entries=_candidate_imports(plan, root_path, gathered.get("root_text")),
                                        listing=(gathered.get("listings") or {}).get(request["backup_dir"]))
    plan["errors"].extend(backup_errors)
    setting_paths = list(leaves(request["root_settings"] or {})) if request["manage_root_config"] else []
    setting_paths += [("plugins", key, name) for key in (CRI_PLUGIN_V2, CRI_RUNTIME_PLUGIN_V3) for name in cri_settings]
    return PlannedChange(plan=plan, warnings=cdi_warnings + warnings, prune=prune, root_setting_paths=setting_paths)


def record_pending_edits(planned, view, file_facts, *, accepted):
    """The edits the running daemon (``view``, ``_facts/daemon_view``) has not loaded and the node's files
    (``file_facts``) set (``_change/pending.pending_edits``): each one refuses the change unless option
    accept_pending_edits (``accepted``) names it; not compared (no view), a note says why. Returns the edits."""
    plan = planned.plan
    default_named = bool(plan["expected"].get("default_runtime")) or bool(plan.get("allow_default_change"))
    edits, unchecked = pending_edits(view, file_facts, named_runtimes=set(plan["expected"]["runtimes"]),
                                     default_named=default_named)
    if unchecked:
        plan["notes"].append(f"edits the running daemon has not loaded were not checked: {unchecked}")
    refused_edits = unaccepted(edits, accepted)
    if refused_edits:
        plan["errors"].append(refusal(refused_edits))
    return edits


def _candidate_imports(plan, root_path, root_text):
    """The root's import entries after the change (what a backup must stay out of)."""
    planned = {item["path"]: item["content"] for item in plan["files"]}
    try:
        imports = tomllib.loads(planned.get(root_path, root_text or "")).get("imports") or []
    except tomllib.TOMLDecodeError:
        return []
    return [entry for entry in imports if isinstance(entry, str)]
