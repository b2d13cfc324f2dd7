"""Facts from what containerd *loaded*: the output of ``containerd config dump``.

Controller side (Python >= 3.11, ``tomllib``). The node module only ships raw text; this module
turns the dump into the facts of the ``ansible_facts.containerd`` dictionary every other part of the core reads
(``_facts/node_facts.NodeFacts.from_evidence`` adds the node's evidence beside them).

Where runtimes live (docs/containerd-loading.md §3, §5):

* config version 2 (every containerd 1.x dump prints ``version = 2``):
  ``plugins."io.containerd.grpc.v1.cri".containerd.runtimes``
* config versions 3 and 4 (containerd 2.x): ``plugins."io.containerd.cri.v1.runtime".containerd.runtimes``;
  a 2.x dump still carries ``io.containerd.grpc.v1.cri`` (streaming settings) and runtimes a
  version 3/4 file wrote there are ignored by the daemon, so they are reported, never counted.
"""

import datetime
import tomllib

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.containerd_release import (
    parse_containerd_version,
    parse_version,
)

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.cri_startup import (
    CRI_PLUGIN_IDS_V3,
    CRI_PLUGIN_V2,
    CRI_RUNTIME_PLUGIN_V3,
    base_spec_problems,
    cri_startup,
)
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.daemon_startup import daemon_startup

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


def load_config_text(text):
    """``(document, parse_error)``: one config file's text parsed (``tomllib``), the one parse of a config file on the
    controller (``_facts/config_files.ConfigFile`` and ``root_config_summary``); ``document`` None when it is no TOML."""
    try:
        return tomllib.loads(text), None
    except tomllib.TOMLDecodeError as error:
        return None, str(error)
    except RecursionError:
        return None, "arrays or inline tables nested too deeply to parse"


def root_config_summary(text, path, parsed=None):
    """The on-disk root file's own ``version`` and ``imports`` (not the dump's: on 2.x the dump's
    ``imports`` lists patterns, never the files that loaded; docs/containerd-loading.md §1).

    ``parsed``: ``load_config_text(text)`` when the caller already holds it (``NodeFacts.from_evidence``: the root is
    parsed once, as a ``ConfigFile``)."""
    summary = {"path": path, "exists": text is not None, "version": None, "imports": [], "parse_error": None}
    if text is None:
        return summary
    document, summary["parse_error"] = parsed if parsed is not None else load_config_text(text)
    if document is None:
        return summary
    version = document.get("version")
    summary["version"] = version if isinstance(version, int) and not isinstance(version, bool) else None
    imports = document.get("imports", [])
    summary["imports"] = [entry for entry in imports if isinstance(entry, str)] if isinstance(imports, list) else []
    return summary


def _declared_root_version(root_config):
    """The version the node's root file declares (a file without the line is version 1), None when it was not read."""
    if not root_config or not root_config.get("exists") or root_config.get("parse_error"):
        return None
    return root_config["version"] if root_config["version"] is not None else 1


def parse_dump_text(dump_text, source_name):
    """The document of a ``config dump`` text (``parse_toml``); RuntimeGateError for an empty or unparsable one."""
    if not dump_text.strip():
        raise RuntimeGateError(f"{source_name} printed nothing (an empty configuration dump)")
    return parse_toml(dump_text, source_name)


def facts_from_dump(dump_text, *, source_name, **options):
    """Turn a ``config dump`` text into containerd facts (``facts_from_document``, whose options it takes).
    Raises RuntimeGateError for text that is not a usable dump."""
    return facts_from_document(parse_dump_text(dump_text, source_name), source_name=source_name, **options)


def facts_from_document(document, *, source, source_name, version_text=None, version_source="the caller", root_config=None,
                        require_dump_keys=False, base_runtime_specs=None):
    """Turn a parsed ``config dump`` (``parse_dump_text``) into containerd facts.

    ``source`` is ``"command"`` or ``"file"``; ``source_name`` names the command or file in messages;
    ``version_text`` is what the node (or the user) says printed it (``containerd --version`` output or ``1.7.35``),
    from ``version_source``; without it the release family is inferred from the dump.
    ``require_dump_keys``: refuse text without the top-level keys every dump prints (``DUMP_TOP_LEVEL_KEYS``).
    ``base_runtime_specs``: the node's evidence on the ``base_runtime_spec`` files the dump names (``_node/base_specs``);
    None when the node's files were not looked at, which leaves a runtime naming one undecided.
    Raises RuntimeGateError for a document that is not a usable dump.
    """
    if require_dump_keys:
        _require_dump_keys(document, source_name)
    dump_version = _dump_version(document, source_name)
    release = release_of(dump_version, version_text, version_source, source_name)
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
    root_version = _declared_root_version(root_config)
    if dump_version >= 3:
        cri_ids = CRI_PLUGIN_IDS_V3
    else:  # 1.x: a version 1 root names plugins by ID (cri_startup)
        cri_ids = {"cri"} if root_version is not None and root_version < 2 else {CRI_PLUGIN_V2}
    runtimes = {name: _runtime_facts(name, table, effective_key, source_name) for name, table in runtimes_table.items()}
    startup = cri_startup(document, dump_version, runtimes, root_version=root_version)
    for name, runtime in startup["added_runtimes"].items():
        runtimes[name] = dict(_plain(runtime), created_from_deprecated_table=True)
    spec_errors, spec_undecided = base_spec_problems(runtimes, base_runtime_specs)
    cri_errors = startup["errors"] + spec_errors
    # Whether containerd itself starts (docs/cri-startup.md): a daemon that exits serves nothing.
    daemon = daemon_startup(document, release, cri_errors, root_version=root_version)

    return {
        "containerd_version": release["text"] if release["low"] == release["high"] else None,
        "containerd_release": release,
        "version_source": release["source"],
        "dump_version": dump_version,
        "cri_runtime_plugin": effective_key,
        # What the CRI plugin uses: the deprecated 1.x default_runtime table renames it to "default". None: unnamed.
        "default_runtime_name": (startup["default_runtime_name"] if startup["added_runtimes"].get("default") else default_runtime_name) or None,
        "runtimes": runtimes,
        "daemon_startup": daemon,
        "cri_startup": {"errors": cri_errors, "notes": startup["notes"], "undecided": startup["undecided"] or "; ".join(spec_undecided) or None,
                        "default_runtime_empty": default_runtime_name == "" and not startup["added_runtimes"].get("default")},
        "ignored_runtimes": {other_key: sorted(ignored_runtimes)} if isinstance(ignored_runtimes, dict) and ignored_runtimes else {},
        "disabled_plugins": [str(plugin) for plugin in disabled_plugins],
        "cri_disabled": any(plugin in cri_ids for plugin in disabled_plugins),
        "source": source,
        "source_name": source_name,
        "root_config": root_config,
    }


# Top-level keys `containerd config dump` prints whatever the files say: root and state are filled with their
# defaults even when a file sets them to "" and [plugins] holds every registered plugin's settings (checked on the
# real 1.6.20, 1.7.35, 2.2.9, 2.3.4 and 2.4.2 with an empty config file). A node's config.toml rarely sets root and
# state, and never all four: passed as a dump it would be judged as if containerd had loaded it alone.
DUMP_TOP_LEVEL_KEYS = ("version", "root", "state", "plugins")


def _require_dump_keys(document, source_name):
    missing = [key for key in DUMP_TOP_LEVEL_KEYS if key not in document]
    if missing:
        raise RuntimeGateError(
            f"{source_name} has no top-level {', '.join(missing)}, which every `containerd config dump` prints, so it "
            "is not such an output (a config file? Give the node's files with host_root, or save the output of "
            "`containerd config dump` on the node)"
        )


def _dump_version(document, source_name):
    version = document.get("version")
    if version is None:
        # `config dump` always prints the version (2 on 1.x, 3 or 4 on 2.x): this is some other file.
        raise RuntimeGateError(
            f"{source_name} has no top-level version, so it is not the output of `containerd config dump`"
        )
    if isinstance(version, bool) or not isinstance(version, int):
        raise RuntimeGateError(f"{source_name}: version is {_type_name(version)}, expected an integer")
    if version not in DUMP_RELEASES:
        raise RuntimeGateError(
            f"{source_name}: version = {version} is no version `containerd config dump` prints "
            "(2 on containerd 1.x, 3 on 2.0-2.2, 4 on 2.3 and later), so it is not such an output"
        )
    return version


# The release family each dump version comes from. `config dump` prints the version it migrated to: 1.x always
# 2 (outputConfig, cmd/containerd/command/config.go @v1.6.20/@v1.7.35); 2.0-2.2 migrate every file to 3
# (ConfigVersion, version/version.go @v2.2.9); 2.3+ to 4 (PR #12562, @v2.3.4).
DUMP_RELEASES = {
    2: ((1, 0, 0), (1, 99, 99), "1.x"),
    3: ((2, 0, 0), (2, 2, 99), "2.0-2.2"),
    4: ((2, 3, 0), (2, 99, 99), "2.3 or later"),
}


def release_of(dump_version, version_text, version_source, source_name):
    """``{"low", "high", "text", "source"}``: the containerd release that printed the dump.

    Exact when the node (or the user, or a version file beside a dump) said which; otherwise the family the dump's
    version belongs to, never the version of a binary that did not print this dump. A stated version the dump
    contradicts fails: the dump or the version is another machine's.
    """
    family_low, family_high, family_text = DUMP_RELEASES[dump_version]
    exact = parse_version(parse_containerd_version(version_text) or version_text) if version_text else None
    if version_text and exact is None:
        raise RuntimeGateError(f"{version_source} says {version_text[:80]!r}, which names no containerd release")
    if exact is None:
        return {"low": list(family_low), "high": list(family_high), "source": "inferred from the dump",
                "text": f"{family_text} (inferred from the dump's version = {dump_version})"}
    if not family_low <= exact <= family_high:
        raise RuntimeGateError(
            f"{source_name} says version = {dump_version}, which containerd {family_text} prints, but {version_source} "
            f"says containerd {'.'.join(map(str, exact))}: the dump and the version are not from the same containerd"
        )
    return {"low": list(exact), "high": list(exact), "source": version_source, "text": ".".join(map(str, exact))}


def _runtime_facts(name, table, plugin_key, source_name):
    where = f"plugins.{plugin_key}.containerd.runtimes.{name}"
    if not isinstance(table, dict):
        raise RuntimeGateError(f"{source_name}: {where} is {_type_name(table)}, expected a table")
    options = table.get("options", {})
    if not isinstance(options, dict):
        raise RuntimeGateError(f"{source_name}: {where}.options is {_type_name(options)}, expected a table")
    runtime_type = table.get("runtime_type")
    binary_name = options.get("BinaryName")
    base_runtime_spec = table.get("base_runtime_spec")
    return {
        "runtime_type": runtime_type if isinstance(runtime_type, str) and runtime_type else None,
        # BinaryName = '' is how 2.x dumps print "unset": the shim's default runc.
        "binary_name": binary_name if isinstance(binary_name, str) and binary_name else None,
        "base_runtime_spec": base_runtime_spec if isinstance(base_runtime_spec, str) and base_runtime_spec else None,
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
