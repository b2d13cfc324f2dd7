# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""What containerd_runtime_config tells: the node's current state read from the probe, the loaded configuration's
effective change, and the result the role registers. Controller side, pure; every shown text redacted.
"""

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.containerd_config import (
    BUILTIN_DEFAULT_RUNTIME,
    facts_from_document,
    parse_containerd_version,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.address import daemon_endpoints
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.files import dirs_to_create, redacted_diff, redacted_file_diffs
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.loaded_config import LoadedConfig
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.loaded_config_diff import summary_and_defaults
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.redaction import redact_message, redact_toml, secrets_in


class redactor:  # noqa: N801 - used like a function: redact(text)
    """Cuts the node's credential values out of a message (``redact(msg)``) or a TOML text (``redact.toml(text)``)."""

    def __init__(self, texts):
        self.secrets = secrets_in([text for text in texts if isinstance(text, str)])

    def __call__(self, message):
        return redact_message(message, self.secrets)

    def toml(self, text):
        return redact_message(redact_toml(text)[0], self.secrets)


def current_state(gathered, containerd_bin):
    """``{"version", "loaded", "facts", "default_runtime", "notes"}`` of the node now, or ``{"error"}``. ``loaded`` is
    the current ``config dump`` parsed once (``_change/loaded_config.LoadedConfig``), None when it does not load or
    cannot be judged; every later reader of the current dump takes it."""
    version = parse_containerd_version(gathered.get("version_text"))
    if version is None:
        return {"error": f"`{containerd_bin} --version` told no version: {gathered.get('version_error') or gathered.get('version_text')}"}
    loaded, facts, notes, dump = None, None, [], gathered.get("dump")
    if dump and dump.get("rc") == 0:
        try:
            loaded = LoadedConfig(dump["stdout"], "the current `config dump`")
            facts = facts_from_document(loaded.document, source="command", source_name=loaded.source_name,
                                        version_text=version, version_source=f"`{containerd_bin} --version`")
        except RuntimeGateError as error:
            loaded = None
            notes.append(f"the current configuration cannot be judged: {error}")
    elif dump:
        notes.append(f"the current configuration does not load (`config dump` exit {dump.get('rc')}): {dump.get('stderr')}")
    return {"version": version, "loaded": loaded, "facts": facts, "notes": notes,
            "default_runtime": (facts.get("default_runtime_name") or BUILTIN_DEFAULT_RUNTIME) if facts else None}


def effective_changes(current, candidate):
    """``(summary, at_release_defaults)``: the keys of the loaded configuration the change sets, ``key: before ->
    after`` (credentials redacted), those that differ from the release's defaults apart from those only brought in at
    them (a new runtime's ``cni_conf_dir: (absent) -> ''``); both ``LoadedConfig``, ``current`` None when unknown."""
    if current is None:
        return [], []
    return summary_and_defaults(current, candidate)


def shown_plan(plan, redact):
    """The plan as shown (``-v``, failures): file contents redacted."""
    return {**plan, "files": [{**item, "content": redact.toml(item["content"])} for item in plan["files"]]}


def proven_result(result, *, node, planned, proof, current, texts, stats, redact, pending, socket, wait):
    """The result of a proven plan (``_change/planner.PlannedChange``, ``_change/proof.Proof``) for ``node``, which
    is ``current`` (``current_state``) with the files ``texts`` and ``stats``; ``pending``: the accepted edits the
    running daemon has not loaded; ``socket``, ``wait``: the options (empty: the addresses the dumps name)."""
    plan = planned.plan
    # Backups keep their file's mode; their directory is the owner's alone. A rollback drops the backups it restored,
    # so the directory it created is removed again when left empty.
    create_dirs = (dirs_to_create([item["path"] for item in plan["files"] if item["changed"]], stats)
                   + dirs_to_create([item["backup"] for item in plan["files"] if item.get("backup")], stats, mode="0700"))
    result = {**result, **daemon_endpoints(socket=socket, wait=wait, current=current["loaded"], candidate=proof.candidate),
              "pending_edits": pending}
    return _proven(result, node=node, plan=plan, shown_plan=shown_plan(plan, redact), candidate_facts=proof.facts,
                   containerd_version=current["version"], prune=planned.prune, warnings=planned.warnings,
                   create_dirs=create_dirs, diff_lines=redacted_diff(plan["files"], texts, redact.secrets),
                   file_diffs=redacted_file_diffs(plan["files"], texts, redact.secrets),
                   loaded_changes=effective_changes(current["loaded"], proof.candidate))


def _proven(result, *, node, plan, shown_plan, candidate_facts, containerd_version, prune, warnings, create_dirs,
            diff_lines, loaded_changes, file_diffs=()):
    changed_files = [item["path"] for item in plan["files"] if item["changed"]]
    summary = (f"{node}: proven with containerd {containerd_version}; "
               + (f"would write {', '.join(changed_files)}" if changed_files else "nothing to change"))
    shown = [summary] + [f"note: {note}" for note in shown_plan["notes"]] + [f"warning: {warning}" for warning in warnings]
    if changed_files and result.get("pending_edits"):
        shown += ["edits the running daemon has not loaded, accepted (option accept_pending_edits), go live "
                  "with the restart:"] + [f"  {edit}" for edit in result["pending_edits"]]
    summary, at_defaults = loaded_changes
    if changed_files:
        shown += ["the loaded configuration changes (what differs from the release defaults):"]
        shown += [f"  {line}" for line in summary or ["(nothing loaded changes)"]]
        if at_defaults:
            shown.append(f"  and {len(at_defaults)} keys at the release defaults (listed with -v)")
    return {
        **result,
        "changed": False,
        "refused": False,
        "files": plan["files"],
        "changed_files": changed_files,
        "plan": shown_plan,
        "create_dirs": create_dirs if changed_files else [],
        # Paths only: a loop item is printed at -v, and a file's content carries credentials.
        "backups": [{"path": item["path"], "backup": item["backup"]} for item in plan["files"] if item.get("backup")],
        "prune_backups": prune if changed_files else [],
        "loaded_changes": summary + at_defaults,
        "loaded_changes_at_defaults": at_defaults,
        "diff_lines": diff_lines,
        "file_diffs": list(file_diffs),
        "shown": shown,
        "warnings": warnings,
        "proof": {
            "loaded_runtimes": sorted(candidate_facts["runtimes"]),
            "default_runtime": candidate_facts["default_runtime_name"],
            "containerd_version": containerd_version,
        },
        # What the restart handler requires of the running node: node_crosscheck's expected_handlers.
        "expected_handlers": sorted(plan["expected"]["runtimes"]),
        "msg": summary,
    }
