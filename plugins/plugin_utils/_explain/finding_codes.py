"""Every finding code the core can emit, in one registry: its code, where it comes from, its severity and what it means.

A finding is made only through ``make_finding``, which refuses a code not registered here (or with a severity the
code does not have), and
docs/findings.md has one row per code (tests/unit/plugins/plugin_utils/_explain/test_finding_codes.py compares both ways).
``kind``: ``host`` (one node's rules: ``_explain/host_rules``, ``_explain/rules_config``), ``fleet`` (over every verdict of a run:
``_findings.fleet_findings``), ``run`` (a run that cannot vouch for the fleet: ``_summary.fleet_view``), ``overhead``
(``_explain/overhead``), ``explanation`` (a missing handler's explanation that is no finding: ``missing_explained``).
"""

from collections import namedtuple

FindingCode = namedtuple("FindingCode", ("code", "kind", "severities", "meaning"))

ERROR = "error"
WARNING = "warning"
EITHER = (ERROR, WARNING)

_REGISTRY = (
    # host rules, files and imports (_rules_config)
    FindingCode("IMPORT_GLOB_MATCHES_NOTHING", "host", EITHER, "an imports glob matches no file"),
    FindingCode("DROPIN_NOT_IMPORTED", "host", EITHER, "a drop-in file no import pattern matches"),
    FindingCode("RELATIVE_IMPORT_GLOB", "host", EITHER, "a relative imports glob this containerd resolves from its working directory"),
    FindingCode("CONFD_NOT_IMPORTED", "host", EITHER, "containerd 2.2+: a conf.d file the root does not import"),
    FindingCode("LEGACY_PLUGIN_KEY", "host", EITHER, "runtimes under a CRI plugin key this config version ignores"),
    FindingCode("V3_CONFIG_ON_1X", "host", EITHER, "a version 3 file (or 2.x runtime table) on containerd 1.x"),
    FindingCode("CRI_TABLE_REPLACED", "host", EITHER, "1.x: a later file replaces an earlier file's whole CRI table"),
    FindingCode("ROOT_CRI_SETTING_SHADOWED", "host", (WARNING,), "1.x: a later file that carries the CRI table shadows an edit of the root's CRI settings"),
    FindingCode("MIXED_CONFIG_VERSIONS", "host", EITHER, "the root and a drop-in declare different config versions"),
    # host rules, runtimes and the daemon (_host_rules)
    FindingCode("DEFAULT_RUNTIME_UNDEFINED", "host", EITHER, "default_runtime_name names no loaded runtime"),
    FindingCode("DEFAULT_RUNTIME_NOT_RUNC", "host", (WARNING,), "the default runtime is not runc"),
    FindingCode("RUNTIME_TYPE_MISSING", "host", EITHER, "a loaded runtime has an empty runtime_type"),
    FindingCode("RUNTIME_BINARY_MISSING", "host", (ERROR,), "a runtime's BinaryName is missing or not executable"),
    FindingCode("UNKNOWN_OPTION_KEY", "host", (WARNING,), "an option key the runc shim does not know"),
    FindingCode("CDI_SPEC_MISSING", "host", (WARNING,), "a CDI runtime with no CDI spec on the node"),
    FindingCode("PENDING_RESTART", "host", EITHER, "the running daemon serves other runtimes than the files load"),
    FindingCode("CONTAINERD_WILL_NOT_START", "host", EITHER, "containerd exits at start-up with the loaded configuration"),
    FindingCode("CRI_PLUGIN_FAILS", "host", EITHER, "the CRI plugin refuses the loaded configuration at start-up"),
    FindingCode("CRI_UNAVAILABLE", "host", (ERROR,), "the daemon answers but serves no CRI"),
    # once per run, over every verdict (_findings)
    FindingCode("HANDLER_SERVED_NOWHERE", "fleet", EITHER, "a RuntimeClass handler no judged node serves"),
    FindingCode("RUNTIMECLASS_WITHOUT_NODESELECTOR", "fleet", (WARNING,),
                "a class without nodeSelector whose handler some judged node lacks"),
    FindingCode("PODS_RUN_ON_UNSERVED_HANDLER", "fleet", (WARNING,),
                "pods still running on a judged node under a handler it no longer serves"),
    # a run that cannot vouch for the fleet (_summary)
    FindingCode("CLUSTER_NOT_READ", "run", (ERROR,), "the cluster's RuntimeClasses could not be read"),
    FindingCode("NO_HOST_JUDGED", "run", (ERROR,), "the host pattern matched no inventory host"),
    # RuntimeClass overhead (_overhead)
    FindingCode("POD_DOES_NOT_FIT_WITH_OVERHEAD", "overhead", (WARNING,), "a pod's requests plus its class's overhead exceed a node"),
    FindingCode("RUNTIMECLASS_OVERHEAD_EXCEEDS_ALLOCATABLE", "overhead", (WARNING,), "a class's overhead alone exceeds a node"),
    FindingCode("OVERHEAD_FIT_UNKNOWN", "overhead", (WARNING,), "a quantity that is not a Kubernetes quantity"),
    # no finding: how missing_explained says that nothing the node showed mentions a handler (_findings)
    FindingCode("NOT_CONFIGURED_ANYWHERE", "explanation", (), "no config file the node showed, nor the dump, mentions the handler"),
)

FINDING_CODES = {entry.code: entry for entry in _REGISTRY}


def codes_of(kind):
    """The registered codes of one ``kind``, in registry order."""
    return tuple(entry.code for entry in _REGISTRY if entry.kind == kind)


def registered(code, severity):
    """``code`` when it is registered with ``severity``; raises ValueError otherwise (a programming error)."""
    entry = FINDING_CODES.get(code)
    if entry is None or severity not in entry.severities:
        raise ValueError(f"finding code {code!r} with severity {severity!r} is not in _finding_codes")
    return code


def make_finding(code, severity, message, remedy, evidence, handlers=(), host=None):
    """A finding: ``{"code", "severity", "host", "message", "remedy", "evidence", "handlers"}``."""
    return {
        "code": registered(code, severity),
        "severity": severity,
        "host": host,
        "message": message,
        "remedy": remedy,
        "evidence": evidence,
        "handlers": sorted(set(handlers)),
    }
