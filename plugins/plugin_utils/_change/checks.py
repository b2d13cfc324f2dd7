# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The crosscheck's runtime rules applied to a change's requested runtimes, before anything is written.

Controller side, pure. The crosscheck reports on a node: RUNTIME_TYPE_MISSING and RUNTIME_BINARY_MISSING (errors: no pod
of the handler starts) and UNKNOWN_OPTION_KEY (a warning: containerd drops the key). The role refuses a change that would
produce an error finding, warns where the crosscheck warns, and refuses an option value the runc shim cannot decode into
its Options field (runc's options decode fails when the shim starts, so every pod of the handler fails).
"""

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._explain.host_rules import RUNC_OPTION_KEYS, RUNC_RUNTIME_TYPES

# The runc shim's Options fields that are not strings (api/types/runc/options/oci.pb.go, containerd 1.6-2.x).
RUNC_OPTION_TYPES = {"nopivotroot": bool, "nonewkeyring": bool, "systemdcgroup": bool, "iouid": int, "iogid": int}


def _type_name(kind):
    return {bool: "a boolean (true or false)", int: "an integer", str: "a string"}[kind]


def runtime_problems(expected_runtimes, missing_binaries):
    """``(errors, warnings)`` for the requested runtime tables (``{name: table}``) as the crosscheck would judge them.

    ``missing_binaries`` maps a binary the node lacks (a shim named by runtime_type, a BinaryName) to why.
    """
    errors, warnings = [], []
    for name, table in sorted(expected_runtimes.items()):
        runtime_type = table.get("runtime_type") or ""
        if not runtime_type:
            errors.append(f"RUNTIME_TYPE_MISSING: runtime {name!r} has no runtime_type, so containerd starts no shim for it")
        shim_reason = missing_binaries.get(("shim", runtime_type))
        if shim_reason:
            errors.append(f"RUNTIME_BINARY_MISSING: runtime {name!r} has runtime_type {runtime_type!r}, whose shim "
                          f"{shim_reason}: every pod of the handler would fail")
        if runtime_type not in RUNC_RUNTIME_TYPES:
            continue
        for option, value in sorted((table.get("options") or {}).items()):
            kind = RUNC_OPTION_TYPES.get(option.lower(), str)
            if option.lower() not in RUNC_OPTION_KEYS:
                warnings.append(f"UNKNOWN_OPTION_KEY: runtime {name!r} option {option!r} is no option of the runc shim: "
                                "containerd drops it (use BinaryName, SystemdCgroup, ...)")
            elif not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                errors.append(f"runtime {name!r} option {option!r} is {value!r}, the runc shim reads {_type_name(kind)} "
                              "there: every pod of the handler would fail to start")
    return errors, warnings


# The CRI plugin reads enable_cdi from containerd 1.7.0 on: 1.6.20's `containerd config default` prints no such key and
# its `config dump` drops it from a file (checked on Debian's 1.6.20 and the built 1.7.35); 1.6 never injects CDI devices.
CDI_FIRST_RELEASE = (1, 7)


def cdi_setting(containerd_version, enable_cdi):
    """``(cri_settings, errors, warnings)`` for option ``enable_cdi`` on ``containerd_version`` ("1.6.20").

    None leaves the key alone. On a release before 1.7 the key is ignored: ``true`` is refused (the node would not give
    what is asked), ``false`` is what 1.6 does anyway, so it is not written and a warning says why.
    """
    if enable_cdi is None:
        return {}, [], []
    try:
        release = tuple(int(part) for part in str(containerd_version).split(".")[:2])
    except ValueError:
        release = CDI_FIRST_RELEASE
    if release >= CDI_FIRST_RELEASE:
        return {"enable_cdi": enable_cdi}, [], []
    rule = (f"containerd {containerd_version} has no CDI support: the CRI plugin reads enable_cdi from containerd 1.7.0 "
            "on, and 1.6 ignores the key")
    if enable_cdi:
        return {}, [f"option enable_cdi: true cannot be served: {rule}; upgrade containerd to 1.7 or later, "
                    "or leave option enable_cdi null on this host"], []
    return {}, [], [f"option enable_cdi: false is not written: {rule} (it never injects CDI devices)"]
