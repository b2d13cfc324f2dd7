# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Edits the running daemon has not loaded yet: what it serves compared with what the node's files load now.

Controller side, pure. A file edited after containerd started (runc's ``SystemdCgroup`` line removed, a runtime added)
goes live with the next restart, and the role restarts after its change: the change would activate an edit nobody
asked for. Compared before any change, for the runtimes (presence, ``runtime_type``, every option; a zero value
equals its absence, as the shim decodes them) and the default runtime, which is what the daemon's CRI status shows
(``_facts/daemon_view``; the core's PENDING_RESTART finding compares the same two views by runtime name). Keys the
inputs name (their runtimes, the default when it may change) are the change's own. Every other difference refuses the
change unless ``accept_pending_edits`` names it (the key or a prefix, ``runtimes.runc``).
"""

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.containerd_config import BUILTIN_DEFAULT_RUNTIME
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.daemon_view import SERVING
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.loaded_config_diff import ZERO_VALUES

_ABSENT = "(absent)"


def _set(options):
    return {key: value for key, value in (options or {}).items()
            if not (type(value) in (str, int, bool, list, dict) and value in ZERO_VALUES)}


def _shown(value):
    return _ABSENT if value is None else repr(value)


def pending_edits(view, file_facts, *, named_runtimes, default_named):
    """``(edits, reason)``: ``["runtimes.runc.options.SystemdCgroup: True (running) -> (absent) (files)", ...]``, or
    ``([], reason)`` when the daemon's view is not available (not asked, no client, down): nothing can be compared."""
    if not isinstance(view, dict) or view.get("state") != SERVING:
        return [], (view or {}).get("reason") or "the running daemon's view is not available"
    if not file_facts:
        return [], "the files' loaded configuration is not known"
    running = view.get("runtime_details") or {}
    files = file_facts.get("runtimes") or {}
    edits = []
    for name in sorted(set(running) | set(files)):
        if name in named_runtimes:
            continue
        key = f"runtimes.{name}"
        if name not in files:
            edits.append(f"{key}: served (running) -> not defined (files)")
            continue
        if name not in running:
            edits.append(f"{key}: not served (running) -> defined (files)")
            continue
        before, after = running[name], files[name]
        if (before.get("runtime_type") or None) != (after.get("runtime_type") or None):
            edits.append(f"{key}.runtime_type: {_shown(before.get('runtime_type'))} (running) -> "
                         f"{_shown(after.get('runtime_type'))} (files)")
        old, new = _set(before.get("options")), _set(after.get("options"))
        for option in sorted(set(old) | set(new)):
            if old.get(option) != new.get(option):
                edits.append(f"{key}.options.{option}: {_shown(old.get(option))} (running) -> {_shown(new.get(option))} (files)")
    running_default = view.get("default_runtime") or BUILTIN_DEFAULT_RUNTIME
    files_default = file_facts.get("default_runtime_name") or BUILTIN_DEFAULT_RUNTIME
    if not default_named and running_default != files_default:
        edits.append(f"default_runtime_name: {running_default!r} (running) -> {files_default!r} (files)")
    return edits, None


def unaccepted(edits, accepted):
    """The edits no entry of ``accepted`` names (an entry names its key and every key below it)."""
    prefixes = [entry.strip() for entry in accepted or () if entry and entry.strip()]
    left = []
    for edit in edits:
        key = edit.split(":", 1)[0]
        if not any(key == prefix or key.startswith(prefix + ".") for prefix in prefixes):
            left.append(edit)
    return left


def refusal(edits):
    """The message refusing a change that would activate ``edits`` with its restart."""
    keys = sorted({edit.split(":", 1)[0] for edit in edits})
    return ("the files set what the running containerd has not loaded (edited after it started); the restart after this "
            "change would activate it too, which the inputs do not name:\n" + "\n".join(f"  {edit}" for edit in edits)
            + "\nrestart containerd on its own first, revert the edit, or accept it with "
            f"option accept_pending_edits: {keys}")
