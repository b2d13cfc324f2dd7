"""_daemon_view on what real containerd daemons (1.6, 1.7, 2.2, 2.3, 2.4) answer, asked at test time.

Each release's daemon runs a scenario tree of tests/fixtures/containerd that makes it serve runc, nvidia and
nvidia-cdi (support.containerd_trees.SERVING_SCENARIO) in a private mount namespace; the node's own client code
(``_cri_status.daemon_status``) asks it with the real crictl or over gRPC. The edit test deletes nvidia-cdi from the
running tree's drop-in without a restart: the daemon still serves it, the real dump of the edited tree no longer lists it.
"""
import json
import shutil
from contextlib import ExitStack

import pytest
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.containerd_config import facts_from_dump
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.node_facts import NodeFacts
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.cri_status import daemon_status
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._facts.daemon_view import (
    CRI_UNAVAILABLE,
    SERVING,
    UNKNOWN,
    crictl_info_from_status,
    daemon_view,
    view_from_crictl_info,
)
from support.containerd_daemons import config_dump, crictl
from support.containerd_trees import SERVING_SCENARIO, copy_tree, release_named, running_daemon, scenario_etc
from support.tools import require_tool

RELEASES = sorted(SERVING_SCENARIO)
ALL_RUNTIMES = ["nvidia", "nvidia-cdi", "runc"]
SOCKET = "/run/containerd/containerd.sock"
TIMEOUT = 30


def crictl_evidence(text):
    return {"source": "crictl", "socket": SOCKET, "socket_exists": True, "rc": 0, "stdout": text, "stderr": "",
            "error": None, "command": ["crictl", "--runtime-endpoint", f"unix://{SOCKET}", "info"]}


def grpc_available():
    try:
        import grpc  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture(scope="module")
def serving(tmp_path_factory):
    """``serving(release_name)`` → ``(daemon, node_root)``: one daemon per release on its serving tree, for the module."""
    started = {}
    with ExitStack() as stack:
        def get(release_name):
            if release_name not in started:
                release = release_named(release_name)
                node_root = copy_tree(SERVING_SCENARIO[release_name], tmp_path_factory.mktemp(f"node-{release_name}"))
                started[release_name] = (stack.enter_context(running_daemon(release, node_root)), node_root)
            return started[release_name]
        yield get


def asked(daemon, client):
    """The node's raw evidence for this daemon: ``crictl info`` with the real crictl, or the gRPC status call."""
    if client == "grpc":
        require_tool(grpc_available(), "grpcio is not installed in the venv (requirements.txt)")
        evidence = daemon_status(str(daemon.socket), None, TIMEOUT)
    else:
        evidence = daemon_status(str(daemon.socket), crictl(), TIMEOUT)
    assert evidence["source"] == client, evidence
    return evidence


@pytest.mark.parametrize("release_name", RELEASES)
@pytest.mark.components
def test_both_shapes_give_the_loaded_runtimes_and_default(serving, release_name):
    daemon, _node_root = serving(release_name)
    view = daemon_view(asked(daemon, "crictl"))
    assert view["state"] == SERVING and view["reason"] is None
    assert (view["source"], view["socket"]) == ("crictl", str(daemon.socket))
    assert view["runtimes"] == ALL_RUNTIMES
    assert view["default_runtime"] == "runc"
    assert view["cri_ready"] is True
    assert {condition["type"] for condition in view["conditions"]} >= {"RuntimeReady", "NetworkReady"}
    details = view["runtime_details"]
    assert details["nvidia"]["binary_name"] == "/usr/bin/nvidia-container-runtime"
    assert details["nvidia-cdi"]["binary_name"] == "/usr/bin/nvidia-container-runtime.cdi"
    assert {runtime["runtime_type"] for runtime in details.values()} == {"io.containerd.runc.v2"}
    # 1.x prints "options": null for runc, 2.x its full option set with BinaryName = "": both mean plain runc.
    assert details["runc"]["binary_name"] is None
    json.dumps(view)


@pytest.mark.parametrize("release_name", RELEASES)
@pytest.mark.components
def test_runtime_handlers_only_on_2x_without_the_unnamed_default(serving, release_name):
    daemon, _node_root = serving(release_name)
    evidence = asked(daemon, "crictl")
    raw = json.loads(evidence["stdout"])
    view = daemon_view(evidence)
    if release_name.startswith("1."):
        assert "runtimeHandlers" not in raw and view["runtime_handlers"] is None
    else:
        assert {} in raw["runtimeHandlers"], "the daemon lists the default handler as an entry without a name"
        assert view["runtime_handlers"] == ALL_RUNTIMES


@pytest.mark.parametrize("release_name", RELEASES)
@pytest.mark.components
def test_edit_without_restart_daemon_and_dump_differ(tmp_path, release_name):
    """After the edit the dump lost nvidia-cdi; the still-running daemon serves it (PENDING_RESTART material)."""
    release, scenario = release_named(release_name), SERVING_SCENARIO[release_name]
    node_root = copy_tree(scenario, tmp_path / "node")
    with running_daemon(release, node_root) as daemon:
        # Before the edit the two agree.
        before = config_dump(release, node_root)
        assert before.returncode == 0, before.stderr
        before_dump = facts_from_dump(before.stdout, source="command", source_name="dump")
        assert sorted(before_dump["runtimes"]) == daemon_view(asked(daemon, "crictl"))["runtimes"] == ALL_RUNTIMES
        shutil.copy(scenario_etc(f"{scenario}-after-edit") / "conf.d" / "99-nvidia.toml",
                    node_root / "etc" / "containerd" / "conf.d" / "99-nvidia.toml")
        after = config_dump(release, node_root)
        assert after.returncode == 0, after.stderr
        after_dump = facts_from_dump(after.stdout, source="command", source_name="after-edit dump")
        daemon_after = daemon_view(asked(daemon, "crictl"))
        assert daemon.running()
    assert sorted(after_dump["runtimes"]) == ["nvidia", "runc"]
    assert daemon_after["state"] == SERVING and daemon_after["runtimes"] == ALL_RUNTIMES
    assert set(daemon_after["runtimes"]) - set(after_dump["runtimes"]) == {"nvidia-cdi"}


@pytest.mark.parametrize("release_name", RELEASES)
@pytest.mark.components
def test_grpc_status_response_gives_the_same_view_as_crictl(serving, release_name):
    """The node's gRPC client keeps ``info`` as raw strings; merged the way crictl merges them, it is what crictl
    prints for the same daemon, and the view is equal."""
    daemon, _node_root = serving(release_name)
    crictl_side, grpc_side = asked(daemon, "crictl"), asked(daemon, "grpc")
    assert crictl_info_from_status(grpc_side["response"]) == json.loads(crictl_side["stdout"])
    grpc_view, crictl_view = daemon_view(grpc_side), daemon_view(crictl_side)
    assert grpc_view["state"] == SERVING
    assert {**grpc_view, "source": "crictl"} == crictl_view


@pytest.mark.parametrize("release_name", RELEASES)
@pytest.mark.components
def test_a_daemon_whose_cri_plugin_failed_is_cri_unavailable(tmp_path, release_name):
    """default_runtime_name names no runtime: the daemon runs, its CRI plugin failed to load, RuntimeService is
    unimplemented on the socket. crictl says so; the gRPC client also names the plugin's init error."""
    release, scenario = release_named(release_name), SERVING_SCENARIO[release_name]
    etc = scenario_etc(scenario)
    node_root = copy_tree(scenario, tmp_path / "node", {  # every file that names the default (S3full's drop-in too)
        str(path.relative_to(etc)): path.read_text().replace('default_runtime_name = "runc"', 'default_runtime_name = "kata"')
        for path in etc.rglob("*.toml")})
    with running_daemon(release, node_root) as daemon:
        by_crictl = daemon_view(asked(daemon, "crictl"))
        by_grpc = daemon_view(asked(daemon, "grpc"))
    for view in (by_crictl, by_grpc):
        assert (view["state"], view["runtimes"], view["cri_ready"]) == (CRI_UNAVAILABLE, [], False), view
        assert "unknown service runtime.v1.RuntimeService" in view["reason"], view["reason"]
    assert any('no corresponding runtime configured in `containerd.runtimes` for `containerd` `default_runtime_name = "kata"'
               in error for error in by_grpc["cri_plugin_errors"]), by_grpc


def test_runtime_service_unimplemented_is_cri_unavailable_with_the_plugin_error():
    # The evidence the node's gRPC client returned from a real 1.6.20 daemon whose default runtime was dropped
    # (see tests/integration/daemon for the live run).
    init_error = ("invalid plugin config: no corresponding runtime configured in `containerd.runtimes` for "
                  "`containerd` `default_runtime_name = \"runc\"")
    view = daemon_view({
        "source": "grpc", "socket": SOCKET, "socket_exists": True, "response": None, "grpc_code": "UNIMPLEMENTED",
        "grpc_details": "unknown service runtime.v1.RuntimeService",
        "error": f"/runtime.v1.RuntimeService/Status over unix:{SOCKET} failed: UNIMPLEMENTED: "
                 "unknown service runtime.v1.RuntimeService",
        "cri_plugins": {"error": None, "plugins": [{"type": "io.containerd.grpc.v1", "id": "cri",
                                                   "init_error": init_error}]}})
    assert view["state"] == CRI_UNAVAILABLE
    assert view["runtimes"] == [] and view["cri_ready"] is False
    assert view["cri_plugin_errors"] == [f"io.containerd.grpc.v1.cri: {init_error}"]
    assert "unknown service runtime.v1.RuntimeService" in view["reason"] and init_error in view["reason"]


def test_crictl_failing_with_grpc_unimplemented_is_cri_unavailable():
    # grpc-go formats status errors as "rpc error: code = <Code> desc = <message>"; crictl prints them as they come.
    evidence = crictl_evidence("")
    evidence.update(rc=1, stderr="getting status of runtime: rpc error: code = Unimplemented "
                                 "desc = unknown service runtime.v1.RuntimeService")
    view = daemon_view(evidence)
    assert view["state"] == CRI_UNAVAILABLE and view["runtimes"] == []
    evidence.update(stderr="rpc error: code = Unavailable desc = connection error")
    assert daemon_view(evidence)["state"] == UNKNOWN


@pytest.mark.parametrize(("evidence", "reason_fragment"), [
    (None, "no daemon evidence"),
    ({"source": None, "socket": SOCKET, "error": "neither crictl nor grpcio on the node"}, "neither crictl nor grpcio"),
    ({"source": None, "socket": SOCKET, "error": f"the socket {SOCKET} does not exist"}, "does not exist"),
    ({"source": "grpc", "socket": SOCKET, "response": None, "grpc_code": "UNAVAILABLE",
      "error": "failed: UNAVAILABLE: failed to connect to all addresses"}, "UNAVAILABLE"),
    ({**crictl_evidence("not json"), "rc": 0}, "no JSON"),
    (crictl_evidence(json.dumps({"status": {"conditions": []}})), "no config.containerd"),
    (crictl_evidence(json.dumps({"config": {"containerd": {"runtimes": ["runc"]}}})), "not an object"),
])
def test_anything_else_is_unknown_never_assumed_equal_to_the_dump(evidence, reason_fragment):
    view = daemon_view(evidence)
    assert view["state"] == UNKNOWN
    assert view["runtimes"] is None and view["default_runtime"] is None and view["cri_ready"] is None
    assert reason_fragment in view["reason"]


def test_view_is_not_fooled_by_a_non_object():
    assert view_from_crictl_info(["config"], source="crictl", socket=SOCKET)["state"] == UNKNOWN


@pytest.mark.components
def test_facts_carry_the_evidence_and_the_daemon_view_as_json(serving):
    daemon, node_root = serving("2.2")
    dump = config_dump(release_named("2.2"), node_root)
    assert dump.returncode == 0, dump.stderr
    config_files = [{"path": "/etc/containerd/config.toml", "role": "root", "imported_by": None, "pattern": None,
                     "text": (node_root / "etc/containerd/config.toml").read_text(encoding="utf-8"),
                     "size": 10, "mtime": 1.5, "error": None, "imports": ["/etc/containerd/conf.d/*.toml"],
                     "imports_error": None}]
    evidence = {
        "dump_text": dump.stdout,
        "source": "file", "source_name": "dump_file 'x'", "config_path": "/etc/containerd/config.toml",
        "version_text": None,
        "config_files": config_files, "import_globs": [], "dropin_dirs": [], "binaries": {}, "cdi_dirs": [],
        "daemon": asked(daemon, "crictl"),
    }
    facts = NodeFacts.from_evidence(evidence).facts
    assert facts["config_files"] == config_files
    assert (facts["import_globs"], facts["dropin_dirs"], facts["binaries"], facts["cdi_dirs"]) == ([], [], {}, [])
    assert facts["daemon"]["state"] == SERVING and facts["daemon"]["runtimes"] == ALL_RUNTIMES
    assert json.loads(json.dumps(facts)) == facts
    # A node module that sent none of it: None (unknown), and the daemon view says why.
    for key in ("config_files", "import_globs", "dropin_dirs", "binaries", "cdi_dirs", "daemon"):
        evidence.pop(key)
    bare = NodeFacts.from_evidence(evidence).facts
    assert bare["config_files"] is None and bare["binaries"] is None
    assert bare["daemon"]["state"] == UNKNOWN
