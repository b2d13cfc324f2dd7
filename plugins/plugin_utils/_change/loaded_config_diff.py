"""Every difference between two loaded configurations (``config dump`` before and after a change).

Controller side, over ``_change/loaded_config.LoadedConfig`` (each dump parsed once). The role's proof uses it: a
change keeps everything the node loaded before unless the inputs name it, so every leaf key of the current dump is
compared with the candidate's, not only the runtimes —
``oom_score``, ``debug.level``, ``metrics.address``, ``grpc.max_recv_message_size``, registry mirrors and the options of
runtimes the change does not touch included. Both dumps come from the same binary, so both are migrated to the same
config version and compare key for key.
"""

# A credential's value is never repeated in a message (docs/security.md): these key names hold one.
CREDENTIAL_KEYS = frozenset({"password", "auth", "identitytoken", "token", "client_key", "key_file", "secret"})
MAX_SHOWN_VALUE = 80


def leaves(document, prefix=()):
    """``{("plugins", "io.containerd.grpc.v1.cri", ...): value}`` for every non-table value (arrays whole)."""
    found = {}
    for key, value in document.items():
        path = prefix + (str(key),)
        if isinstance(value, dict) and value:
            found.update(leaves(value, path))
        else:
            found[path] = value
    return found


def _shown(path, value):
    if value is _ABSENT:
        return "(absent)"
    if path and path[-1].lower() in CREDENTIAL_KEYS:
        return "<redacted>"
    text = repr(value)
    return text if len(text) <= MAX_SHOWN_VALUE else text[:MAX_SHOWN_VALUE] + "…"


_ABSENT = object()
ZERO_VALUES = ("", 0, False, [], {})


def _is_runtime_option(path):
    """A key under ``...runtimes.<name>.options``: containerd hands that table to the shim, which decodes it into its
    options message (runc's ``runcoptions.Options``), where an absent field and its zero value are the same setting.
    The dump prints the built-in runc's options in full, a runtime written in a file with only what the file says."""
    for index in range(len(path) - 2):
        if path[index] == "runtimes" and path[index + 2] == "options":
            return True
    return False


def _without_zero_options(found):
    return {path: value for path, value in found.items()
            if not (_is_runtime_option(path) and type(value) in (str, int, bool, list, dict) and value in ZERO_VALUES)}


def differences(before, after, *, named):
    """``["key: before -> after", ...]`` for every leaf that differs between two ``_change/loaded_config.LoadedConfig``,
    except those ``named(path)`` accepts.

    ``named`` says which key paths the change's inputs name (its runtimes, the default it may switch, the root
    settings it writes); a runtime option at its zero value equals its absence; top-level ``imports`` always differ
    (a pattern is added, and the candidate's paths are a copy's).
    """
    before_shown, after_shown = before.leaves, after.leaves
    before_set, after_set = _without_zero_options(before_shown), _without_zero_options(after_shown)
    lines = []
    for path in sorted(set(before_set) | set(after_set)):
        if path[0] == "imports" or named(path):
            continue
        if before_set.get(path, _ABSENT) != after_set.get(path, _ABSENT):
            old, new = before_shown.get(path, _ABSENT), after_shown.get(path, _ABSENT)
            lines.append(f"{'.'.join(path)}: {_shown(path, old)} -> {_shown(path, new)}")
    return lines


def _is_release_default(old, new):
    """A key the change brings in at the value the release gives it when nothing sets it (``(absent) -> ''``): a new
    runtime's table printed whole by ``config dump``, not something the inputs set."""
    return old is _ABSENT and type(new) in (str, int, bool, list, dict) and new in ZERO_VALUES


def summary_and_defaults(before, after):
    """``(summary, at_release_defaults)``: the lines of ``differences`` (nothing named) between two ``LoadedConfig``,
    split into what differs from the release's defaults and the keys that only appear at them (shown at -v)."""
    before_shown, after_shown = before.leaves, after.leaves
    summary, defaults = [], []
    for path in sorted(set(before_shown) | set(after_shown)):
        if path[0] == "imports":
            continue
        old, new = before_shown.get(path, _ABSENT), after_shown.get(path, _ABSENT)
        if old == new:
            continue
        line = f"{'.'.join(path)}: {_shown(path, old)} -> {_shown(path, new)}"
        (defaults if _is_release_default(old, new) else summary).append(line)
    return summary, defaults


def named_by_plan(plan, runtime_plugin_keys, root_setting_paths=()):
    """The ``named`` predicate for a role plan: its runtimes, its default switch when allowed, its root settings."""
    # A runtime the node does not load today and the change defines again (runc under a shadowing CRI table) repairs
    # the node; the proof lists it as a note, not as a loss.
    runtimes = set(plan["expected"]["runtimes"]) | set(plan.get("repaired_runtimes") or ())
    default_named = bool(plan["expected"].get("default_runtime")) or bool(plan.get("allow_default_change"))
    settings = {tuple(path) for path in root_setting_paths}

    def named(path):
        for key in runtime_plugin_keys:
            base = ("plugins", key, "containerd")
            if path[:3] == base and len(path) > 4 and path[3] == "runtimes" and path[4] in runtimes:
                return True
            if default_named and path == base + ("default_runtime_name",):
                return True
        return any(path[:len(setting)] == setting for setting in settings)

    return named
