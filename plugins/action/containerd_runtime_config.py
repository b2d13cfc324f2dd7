# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Plans a node's containerd runtime files and proves them with the real binary; writes nothing in place.

Round trip 1 (node, stdlib): version, root text, imports expanded with Go Glob, texts, current dump.
Controller: ``_render.make_plan``. Round trip 2 (node): the candidate tree in a temp dir, the real
``containerd config dump`` of it and the Go Glob of its imports. Controller: ``_render.judge_candidate``.
The role then writes ``files`` with ``ansible.builtin.copy``.
"""

import posixpath

from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._containerd_config import (
    BUILTIN_DEFAULT_RUNTIME,
    facts_from_dump,
    parse_containerd_version,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._loaded_config_diff import leaves
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._render import input_errors, make_plan
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._render_proof import (
    candidate_tree,
    judge_candidate,
    unmatched_dropins,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._toml_write import TomlWriteError

PROBE = "gpufleet.runtime_gate.containerd_runtime_config_probe"
ARGUMENT_SPEC = dict(
    runtimes=dict(
        type="list",
        elements="dict",
        required=True,
        options=dict(
            name=dict(type="str", required=True),
            runtime_type=dict(type="str", default="io.containerd.runc.v2"),
            binary_name=dict(type="str"),
            options=dict(type="dict", default={}),
        ),
    ),
    dropin_dir=dict(type="str", default="/etc/containerd/conf.d"),
    dropin_name=dict(type="str", default="99-gpufleet.toml"),
    import_pattern=dict(type="str"),
    manage_root_config=dict(type="bool", default=False),
    root_settings=dict(type="dict", default={}),
    default_runtime=dict(type="str"),
    allow_default_change=dict(type="bool", default=False),
    containerd_bin=dict(type="str", default="containerd"),
    config_path=dict(type="str", default="/etc/containerd/config.toml"),
    timeout=dict(type="int", default=60),
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        node = (task_vars or {}).get("inventory_hostname", "?")
        # Go's Glob returns cleaned paths and containerd deduplicates imports by exact string: write clean ones.
        for name in ("config_path", "dropin_dir", "import_pattern"):
            if args[name] and args[name].startswith("/"):
                args[name] = posixpath.normpath(args[name])
        dropin_path = posixpath.join(args["dropin_dir"], args["dropin_name"])
        import_pattern = args["import_pattern"] or posixpath.join(args["dropin_dir"], "*.toml")

        def fail(msg, **fields):
            return {**result, **fields, "failed": True, "changed": False, "msg": f"{node}: {msg}"}

        # Refused before the node is read: the first probe globs the import pattern and reads what it matches.
        refused = input_errors(root_path=args["config_path"], runtimes=args["runtimes"], dropin_dir=args["dropin_dir"],
                               dropin_name=args["dropin_name"], import_pattern=import_pattern)
        if refused:
            return fail("\n".join(refused))

        probe_common = dict(containerd_bin=args["containerd_bin"], timeout=args["timeout"])
        gathered = self._probe(task_vars, mode="gather", config_path=args["config_path"], patterns=[import_pattern],
                               write_paths=[dropin_path, args["config_path"]],
                               binaries=[runtime["binary_name"] for runtime in args["runtimes"] if runtime.get("binary_name")],
                               **probe_common)
        if gathered.get("failed"):
            return fail(gathered.get("msg", "reading the containerd config tree failed"))
        containerd_version = parse_containerd_version(gathered.get("version_text"))
        if containerd_version is None:
            return fail(f"`{args['containerd_bin']} --version` told no version: {gathered.get('version_error') or gathered.get('version_text')}")

        current_facts, notes = None, []
        dump = gathered.get("dump")
        if dump and dump.get("rc") == 0:
            try:
                current_facts = facts_from_dump(dump["stdout"], source="command", source_name="the current `config dump`",
                                                version_text=containerd_version, version_source=f"`{args['containerd_bin']} --version`")
            except RuntimeGateError as error:
                notes.append(f"the current configuration cannot be judged: {error}")
        elif dump:
            notes.append(f"the current configuration does not load (`config dump` exit {dump.get('rc')}): {dump.get('stderr')}")
        current_default = (current_facts.get("default_runtime_name") or BUILTIN_DEFAULT_RUNTIME) if current_facts else None

        plan = make_plan(
            root_path=args["config_path"],
            root_text=gathered.get("root_text"),
            containerd_version=containerd_version,
            runtimes=args["runtimes"],
            dropin_dir=args["dropin_dir"],
            dropin_name=args["dropin_name"],
            import_pattern=import_pattern,
            manage_root_config=args["manage_root_config"],
            root_settings=args["root_settings"],
            default_runtime=args["default_runtime"],
            allow_default_change=args["allow_default_change"],
            current_default_runtime=current_default,
            glob_matches=gathered.get("globs") or {},
            imported_texts=gathered.get("texts") or {},
        )
        plan["notes"] = notes + plan["notes"]
        for runtime in args["runtimes"]:
            reason = (gathered.get("binaries") or {}).get(runtime.get("binary_name") or "")
            if reason:
                plan["errors"].append(f"runtime {runtime['name']!r}: BinaryName {runtime['binary_name']!r} is {reason}: "
                                      "containerd would load the runtime but no pod could start with it")
        texts = gathered.get("texts") or {}
        for item in plan["files"]:
            item["changed"] = texts.get(item["path"]) != item["content"]
            reason = (gathered.get("writable") or {}).get(item["path"])
            if item["changed"] and reason:
                plan["errors"].append(f"cannot write {item['path']}: {reason}")
        if plan["errors"]:
            return fail("\n".join(plan["errors"] + plan["guard_lines"]), plan=plan, guard_lines=plan["guard_lines"])

        # Prove the candidate with the real binary before a file in place is touched.
        try:
            tree = candidate_tree(plan, root_path=args["config_path"], root_text=gathered.get("root_text") or "",
                                  dropin_dir=args["dropin_dir"], existing_paths=set(texts))
        except (TomlWriteError, ValueError) as error:
            return fail(f"cannot build the candidate tree: {error}", plan=plan)
        validated = self._probe(task_vars, mode="validate", config_path=tree["config_path"], files=tree["files"],
                                copy_files=tree["copy_files"], patterns=tree["patterns"], **probe_common)
        if validated.get("failed"):
            return fail(validated.get("msg", "validating the candidate failed"), plan=plan)
        unmatched = unmatched_dropins(tree, validated.get("globs") or {})
        if unmatched or validated.get("glob_errors"):
            return fail("no import of the candidate root config matches " + ", ".join(unmatched)
                        + "".join("; " + error for error in validated.get("glob_errors") or []), plan=plan)
        candidate_dump = validated["dump"]
        if candidate_dump.get("rc") != 0:
            return fail(f"containerd {containerd_version} rejects the candidate configuration (`config dump` exit "
                        f"{candidate_dump.get('rc')}): {candidate_dump.get('stderr')}", plan=plan)
        setting_paths = list(leaves(args["root_settings"] or {})) if args["manage_root_config"] else []
        errors, candidate_facts = judge_candidate(plan, candidate_dump["stdout"], source_name="the candidate's `config dump`",
                                                  current_facts=current_facts,
                                                  current_dump_text=dump["stdout"] if current_facts else None,
                                                  root_setting_paths=setting_paths)
        if errors:
            return fail("the candidate configuration fails its proof, nothing was written:\n" + "\n".join(errors + plan["guard_lines"]),
                        plan=plan, guard_lines=plan["guard_lines"])

        changed_files = [item["path"] for item in plan["files"] if item["changed"]]
        return {
            **result,
            "changed": False,
            "files": plan["files"],
            "changed_files": changed_files,
            "plan": plan,
            "proof": {
                "loaded_runtimes": sorted(candidate_facts["runtimes"]),
                "default_runtime": candidate_facts["default_runtime_name"],
                "containerd_version": containerd_version,
            },
            # What the restart handler requires of the running node, in handler_crosscheck's input shape.
            "verify_runtimeclasses": [
                {"name": name, "handler": name, "node_selector": None} for name in sorted(plan["expected"]["runtimes"])
            ],
            "msg": f"{node}: proven with containerd {containerd_version}; "
                   + (f"would write {', '.join(changed_files)}" if changed_files else "nothing to change"),
        }

    def _probe(self, task_vars, **module_args):
        outcome = self._execute_module(module_name=PROBE, module_args=module_args, task_vars=task_vars)
        outcome.pop("exception", None)
        return outcome
