# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Plans a node's containerd runtime files and proves them with the real binary; writes nothing in place.

Round trip 1 (node, stdlib): version, root text, imports expanded with Go Glob, texts, modes, the current dump.
Controller: ``_render.make_plan`` and the ``_change_*`` decisions. Round trip 2 (node): the candidate tree in a temp
dir, the real ``containerd config dump`` of it and the Go Glob of its imports. Controller: ``_change/proof``.
The role then writes ``files`` with ``ansible.builtin.copy``. Every text shown (message, plan, diff) has the node's
credential values redacted; only ``files[].content`` carries them, and the role registers this task with no_log.
"""

import posixpath
import time
import tomllib

from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._action.gather import gather_containerd_facts
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.address import daemon_endpoints, grpc_address
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.pending import pending_edits, unaccepted
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.pending import refusal as pending_refusal
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.checks import cdi_setting, runtime_problems
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.files import (
    backup_dir_for,
    dirs_to_create,
    dropin_name_for,
    plan_backups,
    redacted_diff,
    redacted_file_diffs,
    set_file_modes,
)
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.inputs import expand_runtimes
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.links import link_errors
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.outcome import (
    current_state,
    effective_changes,
    proven_result,
    redactor,
)
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.containerd_config import CRI_PLUGIN_V2, CRI_RUNTIME_PLUGIN_V3
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.loaded_config_diff import leaves
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.binaries import shim_binary_name
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.render import input_errors, make_plan
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.proof import (
    candidate_tree,
    judge_candidate,
    unmatched_dropins,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._specs.containerd_runtime_config import (
    get_containerd_runtime_config_argument_spec,
)
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.toml_write import TomlWriteError

PROBE = "gpufleet.runtime_gate.containerd_runtime_config_probe"


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        spec = get_containerd_runtime_config_argument_spec()
        _validation, args = self.validate_argument_spec(argument_spec=spec["argument_spec"])
        node = (task_vars or {}).get("inventory_hostname", "?")
        # Go's Glob returns cleaned paths and containerd deduplicates imports by exact string: write clean ones.
        for name in ("config_path", "dropin_dir", "import_pattern", "backup_dir"):
            if args[name] and args[name].startswith("/"):
                args[name] = posixpath.normpath(args[name])
        runtimes = expand_runtimes(args["runtimes"], presets=args["presets"], nvidia_binary_dir=args["nvidia_binary_dir"],
                                   config_path=args["config_path"])
        import_pattern = args["import_pattern"] or posixpath.join(args["dropin_dir"], "*.toml")
        backup_dir = backup_dir_for(args["backup_dir"], args["dropin_dir"])
        redact = redactor([])

        def fail(msg, **fields):
            return {**result, **fields, "failed": True, "refused": True, "changed": False, "msg": redact(f"{node}: {msg}")}

        if not runtimes:
            return fail("containerd_runtimes_runtimes is empty and no preset is chosen: there is nothing to give the node")
        # Refused before the node is read: the first probe globs the import pattern and reads what it matches.
        refused = input_errors(root_path=args["config_path"], runtimes=runtimes, dropin_dir=args["dropin_dir"],
                               dropin_name=args["dropin_name"] or "99-gpufleet.toml", import_pattern=import_pattern)
        if refused:
            return fail("\n".join(refused))

        probe_common = dict(containerd_bin=args["containerd_bin"], timeout=args["timeout"])
        shims = {shim_binary_name(runtime.get("runtime_type") or "io.containerd.runc.v2"): runtime for runtime in runtimes}
        binary_names = [runtime["binary_name"] for runtime in runtimes if runtime.get("binary_name")]
        gathered = self._probe(task_vars, mode="gather", config_path=args["config_path"], patterns=[import_pattern],
                               write_paths=[posixpath.join(args["dropin_dir"], "99-gpufleet.toml"), args["config_path"]],
                               binaries=binary_names + [shim for shim in shims if shim], list_dirs=[backup_dir],
                               **probe_common)
        texts = gathered.get("texts") or {}
        redact = redactor([gathered.get("root_text")] + list(texts.values()))
        if gathered.get("failed"):
            return fail(gathered.get("msg", "reading the containerd config tree failed"))
        current = current_state(gathered, args["containerd_bin"])
        if current.get("error"):
            return fail(current["error"])

        loaded_paths = {path for paths in (gathered.get("globs") or {}).values() for path in paths}
        dropin_name = dropin_name_for(args["dropin_name"], args["dropin_dir"], loaded_paths)
        cri_settings, cdi_errors, cdi_warnings = cdi_setting(current["version"], args["enable_cdi"])
        plan = make_plan(
            root_path=args["config_path"], root_text=gathered.get("root_text"), containerd_version=current["version"],
            runtimes=runtimes, dropin_dir=args["dropin_dir"], dropin_name=dropin_name, import_pattern=import_pattern,
            manage_root_config=args["manage_root_config"], root_settings=args["root_settings"],
            default_runtime=args["default_runtime"], allow_default_change=args["allow_default_change"],
            current_default_runtime=current["default_runtime"], glob_matches=gathered.get("globs") or {},
            imported_texts=texts, cri_settings=cri_settings,
        )
        plan["notes"] = current["notes"] + plan["notes"]
        if dropin_name != (args["dropin_name"] or "99-gpufleet.toml"):
            plan["notes"].append(f"the drop-in is named {dropin_name} to load after nvidia-ctk's 99-nvidia.toml "
                                 "(on containerd 1.x the later file's CRI table replaces the earlier one whole)")
        found_binaries = gathered.get("binaries") or {}
        missing = {("shim", runtime.get("runtime_type") or "io.containerd.runc.v2"): f"{shim} is {found_binaries[shim]}"
                   for shim, runtime in shims.items() if shim and found_binaries.get(shim)}
        type_errors, warnings = runtime_problems(plan["expected"]["runtimes"], missing)
        plan["errors"].extend(cdi_errors + type_errors)
        warnings = cdi_warnings + warnings
        for runtime in runtimes:
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
        plan["errors"].extend(link_errors([item for item in plan["files"] if item["changed"]], root_path=args["config_path"],
                                          realpaths=gathered.get("realpaths") or {}))
        set_file_modes(plan, stats, root_path=args["config_path"])
        candidate_imports = _candidate_imports(plan, args["config_path"], gathered.get("root_text"))
        backup_errors, prune = plan_backups(plan, backup_dir=backup_dir, stamp=time.strftime("%Y%m%dT%H%M%S", time.gmtime())
                                            + "%06dZ" % (time.time_ns() // 1000 % 1000000),
                                            existing_paths=set(texts) | {args["config_path"]} if gathered.get("root_text") is not None else set(texts),
                                            import_entries=candidate_imports, listing=(gathered.get("listings") or {}).get(backup_dir))
        plan["errors"].extend(backup_errors)
        pending = []
        if any(item["changed"] for item in plan["files"]) and not plan["errors"]:
            pending, unchecked = self._pending_edits(task_vars, args, current, plan)
            if unchecked:
                plan["notes"].append(f"edits the running daemon has not loaded were not checked: {unchecked}")
            refused_edits = unaccepted(pending, args["accept_pending_edits"])
            if refused_edits:
                plan["errors"].append(pending_refusal(refused_edits))
        if plan["errors"]:
            return fail("\n".join(plan["errors"] + plan["guard_lines"]), plan=_shown_plan(plan, redact),
                        guard_lines=plan["guard_lines"], warnings=warnings)

        # Prove the candidate with the real binary before a file in place is touched.
        try:
            tree = candidate_tree(plan, root_path=args["config_path"], root_text=gathered.get("root_text") or "",
                                  dropin_dir=args["dropin_dir"], existing_paths=set(texts))
        except (TomlWriteError, ValueError) as error:
            return fail(f"cannot build the candidate tree: {error}", plan=_shown_plan(plan, redact))
        validated = self._probe(task_vars, mode="validate", config_path=tree["config_path"], files=tree["files"],
                                copy_files=tree["copy_files"], patterns=tree["patterns"], **probe_common)
        if validated.get("failed"):
            return fail(validated.get("msg", "validating the candidate failed"), plan=_shown_plan(plan, redact))
        unmatched = unmatched_dropins(tree, validated.get("globs") or {})
        if unmatched or validated.get("glob_errors"):
            return fail("no import of the candidate root config matches " + ", ".join(unmatched)
                        + "".join("; " + error for error in validated.get("glob_errors") or []), plan=_shown_plan(plan, redact))
        candidate_dump = validated["dump"]
        if candidate_dump.get("rc") != 0:
            return fail(f"containerd {current['version']} rejects the candidate configuration (`config dump` exit "
                        f"{candidate_dump.get('rc')}): {candidate_dump.get('stderr')}", plan=_shown_plan(plan, redact))
        setting_paths = list(leaves(args["root_settings"] or {})) if args["manage_root_config"] else []
        setting_paths += [("plugins", key, name) for key in (CRI_PLUGIN_V2, CRI_RUNTIME_PLUGIN_V3) for name in cri_settings]
        current_dump_text = current["dump_text"]
        errors, candidate_facts = judge_candidate(plan, candidate_dump["stdout"], source_name="the candidate's `config dump`",
                                                  current_facts=current["facts"], current_dump_text=current_dump_text,
                                                  root_setting_paths=setting_paths, containerd_version=current["version"],
                                                  root_text=tree["files"][tree["config_path"]],
                                                  base_runtime_specs=validated.get("base_runtime_specs"))
        if errors:
            return fail("the candidate configuration fails its proof, nothing was written:\n" + "\n".join(errors + plan["guard_lines"]),
                        plan=_shown_plan(plan, redact), guard_lines=plan["guard_lines"])

        endpoints = daemon_endpoints(socket=args["socket"], wait=args["wait_command"], current_dump_text=current_dump_text,
                                     candidate_dump_text=candidate_dump["stdout"])
        return proven_result({**result, **endpoints, "pending_edits": pending}, node=node, plan=plan,
                             shown_plan=_shown_plan(plan, redact), candidate_facts=candidate_facts,
                             containerd_version=current["version"], prune=prune, warnings=warnings,
                             # Backups keep their file's mode; their directory is the owner's alone. A rollback drops
                             # the backups it restored, so the directory it created is removed again when left empty.
                             create_dirs=dirs_to_create([item["path"] for item in plan["files"] if item["changed"]], stats)
                             + dirs_to_create([item["backup"] for item in plan["files"] if item.get("backup")], stats,
                                              mode="0700"),
                             diff_lines=redacted_diff(plan["files"], texts, redact.secrets),
                             file_diffs=redacted_file_diffs(plan["files"], texts, redact.secrets),
                             loaded_changes=effective_changes(current_dump_text, candidate_dump["stdout"]))

    def _pending_edits(self, task_vars, args, current, plan):
        """``(edits, reason not checked)``: the running daemon's view (on the socket today's files name) against the
        files' loaded configuration (_change/pending)."""
        if not args["ask_daemon"]:
            return [], "not asked (containerd_runtimes_ask_daemon: false)"
        socket = args["socket"] or grpc_address(current["dump_text"])
        gathered = gather_containerd_facts(self, task_vars, {
            "containerd_bin": args["containerd_bin"], "config_path": args["config_path"], "socket": socket,
            "ask_daemon": True, "timeout": args["timeout"]})
        facts = (gathered.get("ansible_facts") or {}).get("containerd")
        if gathered.get("failed") or not facts:
            return [], gathered.get("msg") or "the running daemon could not be asked"
        default_named = bool(plan["expected"].get("default_runtime")) or bool(plan.get("allow_default_change"))
        return pending_edits(facts.get("daemon"), current["facts"], named_runtimes=set(plan["expected"]["runtimes"]),
                             default_named=default_named)

    def _probe(self, task_vars, **module_args):
        outcome = self._execute_module(module_name=PROBE, module_args=module_args, task_vars=task_vars)
        outcome.pop("exception", None)
        return outcome


def _candidate_imports(plan, root_path, root_text):
    """The root's import entries after the change (what a backup must stay out of)."""
    planned = {item["path"]: item["content"] for item in plan["files"]}
    try:
        imports = tomllib.loads(planned.get(root_path, root_text or "")).get("imports") or []
    except tomllib.TOMLDecodeError:
        return []
    return [entry for entry in imports if isinstance(entry, str)]


def _shown_plan(plan, redact):
    """The plan as shown (``-v``, failures): file contents redacted."""
    return {**plan, "files": [{**item, "content": redact.toml(item["content"])} for item in plan["files"]]}
