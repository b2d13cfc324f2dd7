"""_facts/daemon_startup and the base_runtime_spec rule: when containerd itself exits at start, or its CRI plugin fails
on a base spec file, and what the verdict makes of it. Each rule is decided by real daemons in
tests/integration/daemon/test_daemon_startup_rules.py; these cover the branches without a daemon."""
import pytest

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.containerd_config import facts_from_dump, root_config_summary
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.daemon_view import daemon_view
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._verdict import judge_and_explain

HEAD = 'root = "/var/lib/containerd"\nstate = "/run/containerd"\n'
RUNC_1X = '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
RUNC_2X = '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'


def _facts(top, version="1.7.35", root=None, specs=None, daemon=None):
    dump_version = 2 if version.startswith("1.") else 3 if version < "2.3" else 4
    dump = f"version = {dump_version}\n" + top + HEAD + (
        RUNC_1X if version.startswith("1.") else RUNC_2X)
    facts = facts_from_dump(dump, source="command" if daemon else "file", source_name="dump", version_text=version,
                            root_config=None if root is None else root_config_summary(root, "/etc/containerd/config.toml"),
                            base_runtime_specs=specs)
    facts["daemon"] = daemon
    return facts


def _verdict(facts):
    return judge_and_explain(facts, [], node_name="n", node_labels={})


@pytest.mark.parametrize(("top", "version", "root", "status"), [
    ('required_plugins = ["io.containerd.snapshotter.v1.overlayfs"]\n', "2.3.4", None, "OK"),
    ('required_plugins = ["io.containerd.snapshotter.v1.zfs"]\n', "2.3.4", None, "UNKNOWN"),
    ('required_plugins = ["io.containerd.snapshotter.v1.btrfs"]\n', "1.6.20", "version = 2\n", "UNKNOWN"),
    ('required_plugins = ["io.containerd.nosuch.v1.x"]\n', "2.4.2", None, "MISSING"),
    ('required_plugins = ["io.containerd.runtime.v1.linux"]\n', "2.2.9", None, "MISSING"),  # gone in 2.x
    ('required_plugins = ["io.containerd.snapshotter.v1.native"]\ndisabled_plugins = ["io.containerd.snapshotter.v1.native"]\n',
     "2.2.9", None, "MISSING"),
    # 1.x: a version 2 root matches by URI, a version 1 root by ID; the dump alone cannot tell which (it prints 2).
    ('required_plugins = ["io.containerd.snapshotter.v1.overlayfs"]\n', "1.7.35", "version = 2\n", "OK"),
    ('required_plugins = ["io.containerd.snapshotter.v1.overlayfs"]\n', "1.7.35", "", "MISSING"),
    ('required_plugins = ["io.containerd.snapshotter.v1.overlayfs"]\n', "1.7.35", None, "UNKNOWN"),
    ('required_plugins = ["overlayfs"]\n', "1.7.35", None, "OK"),  # no URI: only a version 1 root prints that
    ('required_plugins = ["overlayfs"]\n', "2.4.2", None, "OK"),  # 2.x migrates the short name
    # An unmeasured release: whether it has the plugin is not known.
    ('required_plugins = ["io.containerd.nosuch.v1.x"]\n', "2.5.0", None, "UNKNOWN"),
    ('required_plugins = ["io.containerd.snapshotter.v1.erofs"]\n', "2.0.14", None, "MISSING"),  # erofs came with 2.1
    ('timeouts = {"io.containerd.timeout.shim.cleanup" = "5s"}\n', "1.7.35", None, "OK"),
    ('timeouts = {"io.containerd.timeout.shim.cleanup" = "soon"}\n', "1.7.35", None, "MISSING"),
    ('timeouts = {"io.containerd.timeout.shim.cleanup" = ""}\n', "2.2.9", None, "MISSING"),
])
def test_daemon_start_up_rules(top, version, root, status):
    verdict = _verdict(_facts(top, version, root))
    assert verdict["status"] == status, verdict
    if status == "MISSING":
        assert verdict["loaded_runtimes"] == [] and "CONTAINERD_WILL_NOT_START" in {f["code"] for f in verdict["findings"]}


def test_root_equal_to_state_stops_the_daemon():
    facts = facts_from_dump('version = 3\nroot = "/x"\nstate = "/x"\n' + RUNC_2X, source="file", source_name="d", version_text="2.2.9")
    assert facts["daemon_startup"]["errors"] and _verdict(facts)["status"] == "MISSING"


def test_a_required_cri_plugin_the_cri_rules_refuse_stops_the_daemon():
    facts = facts_from_dump('version = 4\nrequired_plugins = ["io.containerd.grpc.v1.cri"]\n' + HEAD + RUNC_2X
                            + '  base_runtime_spec = "/etc/s.json"\n', source="file", source_name="d", version_text="2.4.2",
                            base_runtime_specs={"/etc/s.json": {"state": "missing", "detail": "does not exist"}})
    codes = {finding["code"] for finding in _verdict(facts)["findings"]}
    assert {"CONTAINERD_WILL_NOT_START", "CRI_PLUGIN_FAILS"} <= codes


@pytest.mark.parametrize(("entry", "status"), [
    ({"state": "ok", "detail": None}, "OK"),
    ({"state": "missing", "detail": "does not exist"}, "MISSING"),
    ({"state": "invalid", "detail": "is not JSON (x)"}, "MISSING"),
    ({"state": "unchecked", "detail": "is 2000000 bytes, larger than the 1048576 byte limit"}, "UNKNOWN"),
    (None, "UNKNOWN"),
])
def test_base_runtime_spec_files(entry, status):
    dump = "version = 2\n" + HEAD + RUNC_1X + '  base_runtime_spec = "/etc/containerd/s.json"\n'
    facts = facts_from_dump(dump, source="file", source_name="d", version_text="1.6.20",
                            base_runtime_specs={} if entry is None else {"/etc/containerd/s.json": entry})
    verdict = _verdict(facts)
    assert verdict["status"] == status, verdict
    if status == "MISSING":
        assert "CRI_PLUGIN_FAILS" in {finding["code"] for finding in verdict["findings"]}


def test_a_running_daemon_serving_cri_decides_a_conditional_required_plugin():
    """The daemon started with the plugin (it serves CRI): judged from its view, with a warning for the next restart."""
    daemon = {"source": "crictl", "socket": "/run/containerd/containerd.sock", "rc": 0, "stderr": "",
              "stdout": '{"config": {"containerd": {"defaultRuntimeName": "runc", "runtimes": {"runc": '
                        '{"runtimeType": "io.containerd.runc.v2"}}}}}'}
    facts = _facts('required_plugins = ["io.containerd.snapshotter.v1.zfs"]\n', "2.3.4", daemon=daemon)
    facts["daemon"] = daemon_view(daemon)
    verdict = _verdict(facts)
    assert verdict["status"] == "OK", verdict
    warning = [f for f in verdict["findings"] if f["code"] == "CONTAINERD_WILL_NOT_START"]
    assert warning and warning[0]["severity"] == "warning", verdict["findings"]
    facts["daemon"] = None
    assert _verdict(facts)["status"] == "UNKNOWN"


def _cgroup_writable_facts(version, value, daemon=None):
    dump_version = 3 if version < "2.3" else 4
    dump = (f"version = {dump_version}\n" + HEAD + RUNC_2X + f"  cgroup_writable = {value}\n")
    facts = facts_from_dump(dump, source="command" if daemon else "file", source_name="dump", version_text=version)
    facts["daemon"] = daemon_view(daemon) if daemon else None
    return facts


@pytest.mark.parametrize(("version", "value", "status"), [
    ("2.1.9", "true", "UNKNOWN"), ("2.4.2", "true", "UNKNOWN"),
    ("2.4.2", "false", "OK"),
    ("2.0.14", "true", "OK"),  # 2.0 has no cgroup_writable: the key is ignored
])
def test_cgroup_writable_is_for_the_node_to_decide(version, value, status):
    """2.1+ refuses a runtime with cgroup_writable = true unless the node runs the unified cgroup v2 hierarchy, which
    a dump does not say (the differential's trees found it on real 2.1.9-2.4.2 daemons on these cgroup v1 machines)."""
    verdict = _verdict(_cgroup_writable_facts(version, value))
    assert verdict["status"] == status, verdict
    if status == "UNKNOWN":
        assert "cgroup_writable = true" in verdict["reason"] and "cgroup v2" in verdict["reason"], verdict


def test_a_running_daemon_serving_cri_decides_cgroup_writable():
    """A daemon that serves CRI with it started on a cgroup v2 node: its view decides, and a warning stays."""
    daemon = {"source": "crictl", "socket": "/run/containerd/containerd.sock", "rc": 0, "stderr": "",
              "stdout": '{"config": {"containerd": {"defaultRuntimeName": "runc", "runtimes": {"runc": '
                        '{"runtimeType": "io.containerd.runc.v2"}}}}}'}
    verdict = _verdict(_cgroup_writable_facts("2.3.4", "true", daemon=daemon))
    assert verdict["status"] == "OK", verdict
    assert "CONTAINERD_WILL_NOT_START" in {finding["code"] for finding in verdict["findings"]}, verdict["findings"]
