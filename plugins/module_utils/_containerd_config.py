"""Facts from what containerd *loaded*: the output of ``containerd config dump``.

Controller side (Python >= 3.11, ``tomllib``). The node module only ships raw text; this module
turns it into the ``ansible_facts.containerd`` dictionary every other part of the core reads.

Where runtimes live (shared/reference/containerd-loading.md §3, §5):

* config version 2 (every containerd 1.x dump prints ``version = 2``):
  ``plugins."io.containerd.grpc.v1.cri".containerd.runtimes``
* config versions 3 and 4 (containerd 2.x): ``plugins."io.containerd.cri.v1.runtime".containerd.runtimes``;
  a 2.x dump still carries ``io.containerd.grpc.v1.cri`` (streaming settings) and runtimes a
  version 3/4 file wrote there are ignored by the daemon, so they are reported, never counted.
"""

import datetime
import tomllib

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._daemon_view import daemon_view
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node_evidence import parse_containerd_version  # noqa: F401 (re-exported)

CRI_PLUGIN_V2 = "io.containerd.grpc.v1.cri"
CRI_RUNTIME_PLUGIN_V3 = "io.containerd.cri.v1.runtime"

# Plugin IDs whose presence in disabled_plugins takes the CRI service down. "cri" is the short ID an
# unversioned file may use (Docker's containerd.io package ships disabled_plugins = ["cri"]); 1.x
# dumps print what the files said, 2.x migrates short IDs (PR #10907).
CRI_PLUGIN_IDS_V2 = frozenset({CRI_PLUGIN_V2, "cri"})
CRI_PLUGIN_IDS_V3 = frozenset({CRI_PLUGIN_V2, CRI_RUNTIME_PLUGIN_V3, "cri"})

# The CRI plugin's built-in default_runtime_name on 1.x and 2.x (DefaultConfig in pkg/cri/config,
# internal/cri/config). A dump prints it unless the CRI plugin's table is missing altogether.
BUILTIN_DEFAULT_RUNTIME = "runc"

# A dump nests about seven levels (plugins.<id>.containerd.runtimes.<name>.options.<key>). tomllib recurses
# once per nested array or inline table, so thousands of levels raise RecursionError; deeper documents are
# refused before anything walks them recursively (facts, JSON for Ansible).
MAX_NESTING = 64


def parse_toml(text, source):
    """Parse TOML ``text``; ``source`` names it in the error ("dump file '/x'", "`containerd … config dump`")."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise RuntimeGateError(f"{source} is not valid TOML: {error}") from None
    except RecursionError:
        document = None
    if document is None or _nests_deeper_than(document, MAX_NESTING):
        raise RuntimeGateError(
            f"{source} nests tables or arrays more than {MAX_NESTING} levels deep; no containerd configuration does"
        )
    return document


def _nests_deeper_than(document, limit):
    pending = [(document, 0)]
    while pending:
        value, depth = pending.pop()
        if depth > limit:
            return True
        if isinstance(value, dict):
            pending.extend((item, depth + 1) for item in value.values())
        elif isinstance(value, list):
            pending.extend((item, depth + 1) for item in value)
    return False


def root_config_summary(text, path):
    """The on-disk root file's own ``version`` and ``imports`` (not the dump's: on 2.x the dump's
    ``imports`` lists patterns, never the files that loaded; reference §1)."""
    summary = {"path": path, "exists": text is not None, "version": None, "imports": [], "parse_error": None}
    if text is None:
        return summary
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        summary["parse_error"] = str(error)
        return summary
    except RecursionError:
        summary["parse_error"] = "arrays or inline tables nested too deeply to parse"
        return summary
    version = document.get("version")
    summary["version"] = version if isinstance(version, int) and not isinstance(version, bool) else None
    imports = document.get("imports", [])
    summary["imports"] = [entry for entry in imports if isinstance(entry, str)] if isinstance(imports, list) else []
    return summary


def facts_from_dump(dump_text, *, source, source_name, containerd_version=None, root_config=None):
    """Turn a ``config dump`` text into containerd facts.

    ``source`` is ``"command"`` or ``"file"``; ``source_name`` names the command or file in messages.
    Raises RuntimeGateError for text that is not a usable dump.
    """
    if not dump_text.strip():
        raise RuntimeGateError(f"{source_name} printed nothing (an empty configuration dump)")
    document = parse_toml(dump_text, source_name)
    dump_version = _dump_version(document, source_name)
    plugins = _table(document, ("plugins",), source_name, default={})

    effective_key, other_key = (
        (CRI_RUNTIME_PLUGIN_V3, CRI_PLUGIN_V2) if dump_version >= 3 else (CRI_PLUGIN_V2, CRI_RUNTIME_PLUGIN_V3)
    )

    containerd_table = _table(plugins, (effective_key, "containerd"), source_name, default={}, prefix=("plugins",))
    runtimes_table = _table(
        containerd_table, ("runtimes",), source_name, default={}, prefix=("plugins", effective_key, "containerd")
    )
    other_containerd = _table(plugins, (other_key, "containerd"), source_name, default={}, prefix=("plugins",))
    ignored_runtimes = other_containerd.get("runtimes")

    default_runtime_name = containerd_table.get("default_runtime_name")
    if default_runtime_name is not None and not isinstance(default_runtime_name, str):
        raise RuntimeGateError(
            f"{source_name}: plugins.{effective_key}.containerd.default_runtime_name is "
            f"{_type_name(default_runtime_name)}, expected a string"
        )

    disabled_plugins = document.get("disabled_plugins", [])
    if not isinstance(disabled_plugins, list):
        raise RuntimeGateError(f"{source_name}: disabled_plugins is {_type_name(disabled_plugins)}, expected an array")
    for plugin in disabled_plugins:
        # containerd decodes disabled_plugins as []string; an ID of another type cannot be what it loaded.
        if not isinstance(plugin, str):
            raise RuntimeGateError(f"{source_name}: disabled_plugins holds {_type_name(plugin)}, expected plugin IDs (strings)")
    cri_ids = CRI_PLUGIN_IDS_V3 if dump_version >= 3 else CRI_PLUGIN_IDS_V2

    return {
        "containerd_version": containerd_version,
        "dump_version": dump_version,
        "cri_runtime_plugin": effective_key,
        "default_runtime_name": default_runtime_name or None,
        "runtimes": {
            name: _runtime_facts(name, table, effective_key, source_name) for name, table in runtimes_table.items()
        },
        "ignored_runtimes": {other_key: sorted(ignored_runtimes)} if isinstance(ignored_runtimes, dict) and ignored_runtimes else {},
        "disabled_plugins": [str(plugin) for plugin in disabled_plugins],
        "cri_disabled": any(plugin in cri_ids for plugin in disabled_plugins),
        "source": source,
        "source_name": source_name,
        "root_config": root_config,
    }


def _dump_version(document, source_name):
    version = document.get("version")
    if version is None:
        # `config dump` always prints the version (2 on 1.x, 3 or 4 on 2.x): this is some other file.
        raise RuntimeGateError(
            f"{source_name} has no top-level version, so it is not the output of `containerd config dump`"
        )
    if isinstance(version, bool) or not isinstance(version, int):
        raise RuntimeGateError(f"{source_name}: version is {_type_name(version)}, expected an integer")
    return version


def _runtime_facts(name, table, plugin_key, source_name):
    where = f"plugins.{plugin_key}.containerd.runtimes.{name}"
    if not isinstance(table, dict):
        raise RuntimeGateError(f"{source_name}: {where} is {_type_name(table)}, expected a table")
    options = table.get("options", {})
    if not isinstance(options, dict):
        raise RuntimeGateError(f"{source_name}: {where}.options is {_type_name(options)}, expected a table")
    runtime_type = table.get("runtime_type")
    binary_name = options.get("BinaryName")
    return {
        "runtime_type": runtime_type if isinstance(runtime_type, str) and runtime_type else None,
        # BinaryName = '' is how 2.x dumps print "unset": the shim's default runc.
        "binary_name": binary_name if isinstance(binary_name, str) and binary_name else None,
        "options": _plain(options),
    }


def _table(document, keys, source_name, *, default, prefix=()):
    """Walk ``keys`` down nested tables; a missing key gives ``default``, a non-table is an error."""
    current = document
    for depth, key in enumerate(keys):
        if key not in current:
            return default
        current = current[key]
        if not isinstance(current, dict):
            where = ".".join(prefix + keys[: depth + 1])
            raise RuntimeGateError(f"{source_name}: {where} is {_type_name(current)}, expected a table")
    return current


def _type_name(value):
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return f"a string ({value!r})" if len(value) <= 40 else "a string"
    return f"a {type(value).__name__}"


def _plain(value):
    """TOML dates and times become strings, so facts stay JSON for Ansible and reports."""
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    return value


def facts_from_evidence(evidence):
    """Facts from the raw evidence the ``containerd_facts`` node module returns (see its ``gather``)."""
    facts = facts_from_dump(
        evidence["dump_text"],
        source=evidence["source"],
        source_name=evidence["source_name"],
        containerd_version=parse_containerd_version(evidence.get("version_text")),
        root_config=root_config_summary(evidence.get("root_config_text"), evidence["config_path"]),
    )
    facts["root_config"]["read_error"] = evidence.get("root_config_error")
    # Raw node evidence for the findings, carried as the node sent it (None: not sent); shapes in docs/daemon-view.md.
    for key in EVIDENCE_KEYS:
        facts[key] = evidence.get(key)
    facts["daemon"] = daemon_view(evidence.get("daemon"))
    return facts


EVIDENCE_KEYS = ("config_files", "import_globs", "dropin_dirs", "binaries", "cdi_dirs")
