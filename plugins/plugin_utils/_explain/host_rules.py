"""Host rules: the silent-failure catalogue of containerd-loading.md, turned into findings for one node.

Pure controller-side functions. Each rule reads what it needs from the facts (the dump's runtimes and
the raw evidence next to them) and returns findings; a rule whose evidence is absent returns none.
File rules (imports, versions) live in ``_explain/rules_config``; runtime and daemon rules here.
"""

import os

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.config_files import CRI_PLUGIN_KEYS
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.containerd_config import BUILTIN_DEFAULT_RUNTIME, CRI_PLUGIN_V2
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.node_facts import runtime_binary_problem, runtime_facts
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._explain.finding_codes import ERROR, WARNING, codes_of, make_finding
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._explain.host_context import (
    HostContext,
    listings,
    severity,
    toml_key,
)
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._explain.rules_config import import_rules, version_rules

# Every code a host rule can emit (the registry's; docs/findings.md explains each).
HOST_CODES = codes_of("host")

# Fields of the runc shim's Options (api/types/runc/options, 1.6–2.x); CRI decodes a runtime's
# `options` into it by field name, case-insensitively, and drops any other key (docs/containerd-loading.md §8).
RUNC_OPTION_KEYS = frozenset(key.lower() for key in (
    "NoPivotRoot", "NoNewKeyring", "ShimCgroup", "IoUid", "IoGid", "BinaryName", "Root", "CriuPath",
    "SystemdCgroup", "CriuImagePath", "CriuWorkPath", "TaskApiAddress", "TaskApiVersion",
))
RUNC_RUNTIME_TYPES = frozenset({"io.containerd.runc.v2", "io.containerd.runc.v1"})
CDI_SPEC_SUFFIXES = (".json", ".yaml", ".yml")


# -------------------------------------------------------------------------------------- runtimes


def runtime_rules(context):
    findings = []
    plugin_key = context.facts.get("cri_runtime_plugin") or CRI_PLUGIN_V2
    default_key = ("plugins", plugin_key, "containerd", "default_runtime_name")
    default_file, default_line = context.last_file_setting(default_key)
    daemon = context.node.loaded_daemon_view or {}
    findings.extend(_daemon_startup_findings(context, daemon))
    startup_errors = [error for error in (context.facts.get("cri_startup") or {}).get("errors") or ()
                      if not error.startswith("default_runtime_name ") or (context.facts.get("cri_startup") or {}).get("default_runtime_empty")]
    if startup_errors:
        # What containerd's CRI plugin checks when it starts (_cri_startup; docs/cri-startup.md): the dump loads, the plugin does not.
        serving = daemon.get("state") == "serving"
        findings.append(make_finding(
            "CRI_PLUGIN_FAILS", WARNING if serving else ERROR,
            "The CRI plugin refuses this configuration, so containerd serves no runtime to the kubelet"
            + (" once it restarts" if serving else "") + ": " + "; ".join(startup_errors) + ".",
            "Fix the setting named above and restart containerd; `journalctl -u containerd` shows \"failed to load plugin\" "
            "with the same cause.",
            context.evidence(errors=startup_errors, key=toml_key(*default_key)),
            [] if serving else context.missing,
        ))
    elif context.cri_broken():
        # A daemon still serving CRI started from older files: the failure comes with the next restart.
        serving = daemon.get("state") == "serving"
        findings.append(make_finding(
            "DEFAULT_RUNTIME_UNDEFINED", WARNING if serving else ERROR,
            f"default_runtime_name {context.default_runtime!r} is not among the loaded runtimes "
            f"[{', '.join(sorted(context.runtimes))}]: the CRI plugin fails validation and every pod on the node fails"
            + (" once containerd restarts." if serving else "."),
            f"Define a runtime named {context.default_runtime!r} in the file that defines the other runtimes, "
            "or set default_runtime_name to one of them.",
            context.evidence(file=default_file or (None if context.files is None else "(built-in default)"), line=default_line,
                             key=toml_key(*default_key), default_runtime=context.default_runtime, loaded_runtimes=sorted(context.runtimes)),
            [] if serving else context.missing,
        ))
    elif context.default_runtime != BUILTIN_DEFAULT_RUNTIME:
        findings.append(make_finding(
            "DEFAULT_RUNTIME_NOT_RUNC", WARNING,
            f"The default runtime is {context.default_runtime!r}: every pod on this node without a RuntimeClass runs through it.",
            "Keep default_runtime_name = \"runc\" and select the special runtime with a RuntimeClass, unless every pod must use it.",
            context.evidence(DEFAULT_RUNTIME=context.default_runtime, AFFECTED="all", NEEDS_RUNTIMECLASS="no", BLAST_RADIUS="node",
                             file=default_file, line=default_line, key=toml_key(*default_key)),
            [context.default_runtime],
        ))
    names = set(context.runtimes) | set(daemon.get("runtimes") or ())
    for name in sorted(names):
        findings.extend(_runtime_findings(context, plugin_key, name, runtime_facts(context.facts, name)))
    return findings


def _daemon_startup_findings(context, daemon):
    """containerd itself exits at start (``_facts/daemon_startup``; docs/cri-startup.md): nothing is served. With a daemon
    still serving CRI (it started from older files, or a required plugin that loads only on some nodes loaded here), the
    exit comes with the next restart, or may: a warning."""
    startup = context.facts.get("daemon_startup") or {}
    serving = daemon.get("state") == "serving"
    errors, undecided = startup.get("errors") or [], (startup.get("undecided") or []) if serving else []
    if not errors and not undecided:
        return []
    if errors:
        message = ("containerd exits at start with this configuration, so the node serves no runtime to the kubelet"
                   + (" once containerd restarts" if serving else "") + ": " + "; ".join(errors) + ".")
    else:
        message = ("The running containerd serves CRI, but whether it starts again with this configuration depends on "
                   "the node: " + "; ".join(undecided) + ".")
    return [make_finding(
        "CONTAINERD_WILL_NOT_START", WARNING if serving else ERROR, message,
        "Fix the setting named above (remove a required plugin the node cannot load, or make it loadable) and restart "
        "containerd; `journalctl -u containerd` shows the same cause as containerd's last line before it exits.",
        context.evidence(errors=errors, undecided=undecided,
                         key="required_plugins" if any("required_plugins" in line for line in errors + undecided) else None),
        [] if serving else context.missing,
    )]


def _runtime_findings(context, plugin_key, name, runtime):
    findings = []
    key = toml_key("plugins", plugin_key, "containerd", "runtimes", name)
    if not runtime.get("runtime_type"):
        file, line = context.runtime_location(name)
        # An empty runtime_type names no shim: the handler is listed, every sandbox of it fails (not served).
        findings.append(make_finding(
            "RUNTIME_TYPE_MISSING", ERROR if name in context.missing else WARNING,
            f"Runtime {name!r} has no runtime_type, so containerd does not know which shim to start for it: "
            "every pod of this handler fails.",
            f"Set runtime_type = \"io.containerd.runc.v2\" (or the runtime's own shim type) in [{key}].",
            context.evidence(file=file, line=line, key=f"{key}.runtime_type", runtime=name), [name],
        ))
    binary = runtime_binary_problem(context.facts, runtime)
    if binary:
        setting = ("options", "BinaryName") if binary["role"] == "BinaryName" else ("runtime_type",)
        file, line = context.runtime_location(name, *setting)
        what = {"BinaryName": "runs", "runc": "runs (no BinaryName)", "shim": "needs the shim"}[binary["role"]]
        findings.append(make_finding(
            "RUNTIME_BINARY_MISSING", ERROR,
            f"Runtime {name!r} {what} {binary['binary']!r}, which {binary['problem']} on the node, so its pods cannot start.",
            f"Install {binary['binary']} (for NVIDIA: the NVIDIA Container Toolkit) or fix "
            + (f"BinaryName in [{key}.options]." if binary["role"] == "BinaryName" else f"runtime_type in [{key}]."),
            context.evidence(file=file, line=line, key=f"{key}.{'.'.join(setting)}", runtime=name, binary=binary["binary"],
                             binary_role=binary["role"]),
            [name],
        ))
    for option, file, line in _unknown_options(context, name, runtime):
        findings.append(make_finding(
            "UNKNOWN_OPTION_KEY", WARNING,
            f"Runtime {name!r} sets option {option!r}, which the runc shim does not know: containerd ignores it.",
            f"Use the runc option names (e.g. BinaryName, SystemdCgroup) in [{key}.options].",
            context.evidence(file=file, line=line, key=f"{key}.options.{toml_key(option)}", runtime=name, option=option), [name],
        ))
    findings.extend(_cdi_findings(context, name, runtime))
    return findings


def _unknown_options(context, name, runtime):
    """``(option, file, line)`` for option keys of a runc runtime that the shim's Options type lacks.

    Read from every loaded file (1.6 drops such keys from the dump) and from the dump (2.x keeps them).
    """
    found = {}
    sources = [(None, runtime)] + [
        (config_file, config_file.runtimes(plugin_key).get(name)) for config_file in context.loaded_files for plugin_key in CRI_PLUGIN_KEYS
    ]
    for config_file, table in sources:
        if not isinstance(table, dict):
            continue
        if (table.get("runtime_type") or runtime.get("runtime_type") or "io.containerd.runc.v2") not in RUNC_RUNTIME_TYPES:
            continue
        options = table.get("options")
        for option in options if isinstance(options, dict) else ():
            if option.lower() not in RUNC_OPTION_KEYS and (option not in found or found[option][0] is None):
                file, line = (config_file.path, None) if config_file else context.runtime_location(name, "options", option)
                if config_file:
                    line = next(filter(None, (config_file.line_of("plugins", key, "containerd", "runtimes", name, "options", option)
                                              for key in CRI_PLUGIN_KEYS)), None)
                found[option] = (file, line)
    return [(option, file, line) for option, (file, line) in sorted(found.items())]


def _cdi_findings(context, name, runtime):
    # The NVIDIA CDI runtime injects devices only from CDI specs (/etc/cdi, /var/run/cdi by default).
    cdi_dirs = listings(context.facts.get("cdi_dirs"))
    binary = runtime.get("binary_name") or ""
    if not cdi_dirs or not (binary.endswith(".cdi") or name == "nvidia-cdi"):
        return []
    specs = sorted(
        os.path.join(directory, entry["name"]) for directory, entries in cdi_dirs.items() for entry in entries or ()
        if entry.get("is_file", True) and entry["name"].endswith(CDI_SPEC_SUFFIXES)
    )
    if specs:
        return []
    return [make_finding(
        "CDI_SPEC_MISSING", WARNING,
        f"Runtime {name!r} is a CDI runtime, but no CDI spec exists in {', '.join(sorted(cdi_dirs))}: its pods get no devices.",
        "Generate the spec (nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml) or enable the GPU Operator's CDI support.",
        context.evidence(runtime=name, binary=binary or None, cdi_dirs=sorted(cdi_dirs),
                         key=toml_key("plugins", context.facts.get("cri_runtime_plugin") or CRI_PLUGIN_V2, "containerd", "runtimes", name)),
        [name],
    )]


# -------------------------------------------------------------------------------------- daemon


def daemon_rules(context):
    view = context.node.loaded_daemon_view
    if view is None:
        return []
    if view["state"] == "cri_unavailable":
        return [make_finding(
            "CRI_UNAVAILABLE", ERROR,
            "containerd runs but serves no CRI: the CRI plugin failed to load, so the kubelet can start no pod here.",
            "Read `journalctl -u containerd` for \"failed to load plugin io.containerd.grpc.v1.cri\", fix the cause "
            "(often default_runtime_name naming a dropped runtime) and restart containerd.",
            context.evidence(reason=view.get("reason"), source=view.get("source"), socket=view.get("socket"),
                             dump_runtimes=sorted(context.runtimes), cri_plugin_errors=view.get("cri_plugin_errors") or None),
            context.missing,
        )]
    dump_runtimes = sorted(context.runtimes)
    only_in_dump = sorted(set(dump_runtimes) - set(view["runtimes"]))
    only_in_daemon = sorted(set(view["runtimes"]) - set(dump_runtimes))
    default_differs = bool(view.get("default_runtime")) and view["default_runtime"] != context.default_runtime
    if not (only_in_dump or only_in_daemon or default_differs):
        return []
    handlers = [handler for handler in context.missing if handler in only_in_dump]
    return [make_finding(
        "PENDING_RESTART", severity(handlers),
        "The running containerd serves other runtimes than its config files now load: the files changed after it started.",
        "Restart containerd (systemctl restart containerd) after checking the new config, or revert the edit.",
        context.evidence(daemon_runtimes=view["runtimes"], dump_runtimes=dump_runtimes, only_in_dump=only_in_dump,
                         only_in_daemon=only_in_daemon, daemon_default_runtime=view.get("default_runtime"),
                         dump_default_runtime=context.default_runtime),
        handlers + only_in_daemon,
    )]


RULES = (import_rules, version_rules, runtime_rules, daemon_rules)


def host_rule_findings(facts, verdict):
    context = HostContext(facts, verdict)
    findings = []
    for rule in RULES:
        findings.extend(rule(context))
    return findings, context.mentioned
