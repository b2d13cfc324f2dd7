import pytest

"""The crosscheck's runtime rules on a change's requested runtimes (issue 13 item 6)."""
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.checks import cdi_setting, runtime_problems


def test_a_string_for_a_boolean_option_is_refused():
    errors, warnings = runtime_problems({"nvidia": {"runtime_type": "io.containerd.runc.v2",
                                                    "options": {"SystemdCgroup": "yes"}}}, {})
    assert errors == ["runtime 'nvidia' option 'SystemdCgroup' is 'yes', the runc shim reads a boolean (true or false) "
                      "there: every pod of the handler would fail to start"]
    assert warnings == []


def test_an_unknown_option_key_is_a_warning():
    errors, warnings = runtime_problems({"nvidia": {"runtime_type": "io.containerd.runc.v2",
                                                    "options": {"SystemdCgroups": True, "IoUid": 0, "BinaryName": "/x"}}}, {})
    assert errors == []
    assert warnings == ["UNKNOWN_OPTION_KEY: runtime 'nvidia' option 'SystemdCgroups' is no option of the runc shim: "
                        "containerd drops it (use BinaryName, SystemdCgroup, ...)"]


def test_a_shim_missing_on_the_node_is_refused():
    errors, _warnings = runtime_problems({"kata": {"runtime_type": "io.containerd.bogus.v1"}},
                                         {("shim", "io.containerd.bogus.v1"): "containerd-shim-bogus-v1 is not an executable file on the node"})
    assert errors == ["RUNTIME_BINARY_MISSING: runtime 'kata' has runtime_type 'io.containerd.bogus.v1', whose shim "
                      "containerd-shim-bogus-v1 is not an executable file on the node: every pod of the handler would fail"]


def test_a_boolean_is_no_integer():
    errors, _warnings = runtime_problems({"r": {"runtime_type": "io.containerd.runc.v2", "options": {"IoUid": True}}}, {})
    assert errors and "reads an integer" in errors[0]


@pytest.mark.parametrize(("version", "enable_cdi", "expected"), [
    ("1.7.35", True, ({"enable_cdi": True}, 0, 0)),
    ("2.3.4", False, ({"enable_cdi": False}, 0, 0)),
    ("1.6.20", None, ({}, 0, 0)),
    ("1.6.20", True, ({}, 1, 0)),    # 1.6 would ignore it: refused with the release rule
    ("1.6.20", False, ({}, 0, 1)),   # what 1.6 does anyway: not written, said
])
def test_enable_cdi_follows_the_release_that_reads_it(version, enable_cdi, expected):
    settings, errors, warnings = cdi_setting(version, enable_cdi)
    assert (settings, len(errors), len(warnings)) == expected
    for message in errors + warnings:
        assert "from containerd 1.7.0 on" in message and version in message
