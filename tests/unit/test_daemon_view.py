"""_daemon_view on real ``crictl info`` captures from containerd 1.7.34 and 2.2.0 daemons.

Each capture pair was taken from a running daemon before and after one runtime (nvidia-cdi) was deleted
from its drop-in without a restart (shared/fixtures/containerd/README.md): the daemon still serves it,
the dump of the edited tree no longer lists it.
"""
import json

import pytest
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._containerd_config import (
    facts_from_dump,
    facts_from_evidence,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._daemon_view import (
    CRI_UNAVAILABLE,
    SERVING,
    UNKNOWN,
    crictl_info_from_status,
    daemon_view,
    view_from_crictl_info,
)
from support.paths import SHARED_FIXTURES
from support.tools import require_tool

CAPTURES = {"1.7.34": "1.7.34/S3full/running-daemon", "2.2.0": "2.2.0/S1/running-daemon"}
ALL_RUNTIMES = ["nvidia", "nvidia-cdi", "runc"]
SOCKET = "/run/containerd/containerd.sock"


def capture_dir(version):
    directory = SHARED_FIXTURES / CAPTURES[version]
    require_tool(directory.is_dir(), f"{directory} is missing (the shared checkout)")
    return directory


def crictl_evidence(text):
    return {"source": "crictl", "socket": SOCKET, "socket_exists": True, "rc": 0, "stdout": text, "stderr": "",
            "error": None, "command": ["crictl", "--runtime-endpoint", f"unix://{SOCKET}", "info"]}


def view_of_capture(version, name="crictl-info.json"):
    return daemon_view(crictl_evidence((capture_dir(version) / name).read_text(encoding="utf-8")))


@pytest.mark.parametrize("version", sorted(CAPTURES))
def test_both_shapes_give_the_loaded_runtimes_and_default(version):
    view = view_of_capture(version)
    assert view["state"] == SERVING and view["reason"] is None
    assert (view["source"], view["socket"]) == ("crictl", SOCKET)
    assert view["runtimes"] == ALL_RUNTIMES
    assert view["default_runtime"] == "runc"
    assert view["cri_ready"] is True
    assert {condition["type"] for condition in view["conditions"]} >= {"RuntimeReady", "NetworkReady"}
    details = view["runtime_details"]
    assert details["nvidia"]["binary_name"] == "/usr/bin/nvidia-container-runtime"
    assert details["nvidia-cdi"]["binary_name"] == "/usr/bin/nvidia-container-runtime.cdi"
    assert {runtime["runtime_type"] for runtime in details.values()} == {"io.containerd.runc.v2"}
    # 1.7 prints "options": null for runc, 2.x its full option set with BinaryName = "": both mean plain runc.
    assert details["runc"]["binary_name"] is None
    json.dumps(view)


def test_runtime_handlers_only_on_2x_without_the_unnamed_default():
    assert view_of_capture("1.7.34")["runtime_handlers"] is None
    raw = json.loads((capture_dir("2.2.0") / "crictl-info.json").read_text(encoding="utf-8"))
    assert {} in raw["runtimeHandlers"], "the capture lists the default handler as an entry without a name"
    assert view_of_capture("2.2.0")["runtime_handlers"] == ALL_RUNTIMES


@pytest.mark.parametrize("version", sorted(CAPTURES))
def test_edit_without_restart_daemon_and_dump_differ(version):
    """After the edit the dump lost nvidia-cdi; the still-running daemon serves it (PENDING_RESTART material)."""
    directory = capture_dir(version)
    after_dump = facts_from_dump((directory / "config-dump-after-edit-no-restart.toml").read_text(encoding="utf-8"),
                                 source="file", source_name="after-edit dump")
    daemon_after = view_of_capture(version, "crictl-info-after-edit-no-restart.json")
    assert sorted(after_dump["runtimes"]) == ["nvidia", "runc"]
    assert daemon_after["runtimes"] == ALL_RUNTIMES
    assert set(daemon_after["runtimes"]) - set(after_dump["runtimes"]) == {"nvidia-cdi"}
    # Before the edit the two agree.
    before_dump = facts_from_dump((directory.parent / "config-dump.toml").read_text(encoding="utf-8"),
                                  source="file", source_name="dump")
    assert sorted(before_dump["runtimes"]) == view_of_capture(version)["runtimes"]


@pytest.mark.parametrize("version", sorted(CAPTURES))
def test_grpc_status_response_gives_the_same_view_as_crictl(version):
    """The node's gRPC client keeps ``info`` as raw strings; merged the way crictl merges them, the view is equal."""
    printed = json.loads((capture_dir(version) / "crictl-info.json").read_text(encoding="utf-8"))
    response = {"status": printed["status"],
                "info": {key: value if isinstance(value, str) else json.dumps(value)
                         for key, value in printed.items() if key not in ("status", "runtimeHandlers", "features")}}
    for key in ("runtimeHandlers", "features"):
        if key in printed:
            response[key] = printed[key]
    assert crictl_info_from_status(response) == printed
    grpc_view = daemon_view({"source": "grpc", "socket": SOCKET, "response": response, "error": None, "grpc_code": None})
    crictl_view = view_of_capture(version)
    assert {**grpc_view, "source": "crictl"} == crictl_view


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


def test_facts_carry_the_evidence_and_the_daemon_view_as_json():
    directory = capture_dir("2.2.0")
    config_files = [{"path": "/etc/containerd/config.toml", "role": "root", "imported_by": None, "pattern": None,
                     "text": (directory.parent / "etc/containerd/config.toml").read_text(encoding="utf-8"),
                     "size": 10, "mtime": 1.5, "error": None, "imports": ["/etc/containerd/conf.d/*.toml"],
                     "imports_error": None}]
    evidence = {
        "dump_text": (directory.parent / "config-dump.toml").read_text(encoding="utf-8"),
        "source": "file", "source_name": "dump_file 'x'", "config_path": "/etc/containerd/config.toml",
        "version_text": None, "root_config_text": None, "root_config_error": None,
        "config_files": config_files, "import_globs": [], "dropin_dirs": [], "binaries": {}, "cdi_dirs": [],
        "daemon": crictl_evidence((directory / "crictl-info.json").read_text(encoding="utf-8")),
    }
    facts = facts_from_evidence(evidence)
    assert facts["config_files"] == config_files
    assert (facts["import_globs"], facts["dropin_dirs"], facts["binaries"], facts["cdi_dirs"]) == ([], [], {}, [])
    assert facts["daemon"]["state"] == SERVING and facts["daemon"]["runtimes"] == ALL_RUNTIMES
    assert json.loads(json.dumps(facts)) == facts
    # A node module that sent none of it: None (unknown), and the daemon view says why.
    for key in ("config_files", "import_globs", "dropin_dirs", "binaries", "cdi_dirs", "daemon"):
        evidence.pop(key)
    bare = facts_from_evidence(evidence)
    assert bare["config_files"] is None and bare["binaries"] is None
    assert bare["daemon"]["state"] == UNKNOWN
