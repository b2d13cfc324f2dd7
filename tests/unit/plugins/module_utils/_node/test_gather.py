"""_node_gather on real file trees: node paths mapped under host_root, file texts capped, links kept inside the root."""
import json
import os
import time

import pytest
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.gather import (
    host_path,
    node_path_of,
    read_text_file,
    run_command,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.evidence import gather, gather_node_evidence
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.imports import walk_imports
from support.node_trees import executable, write


def test_file_text_is_capped_and_must_be_utf8(tmp_path):
    big = write(tmp_path / "big.toml", "#" * 100)
    assert read_text_file(big, limit=10)["error"] == "is 100 bytes, larger than the 10 byte limit"
    assert read_text_file(big, limit=10)["size"] == 100
    latin1 = tmp_path / "latin1.toml"
    latin1.write_bytes("# r\xe9sum\xe9\n".encode("latin-1"))
    assert "not UTF-8" in read_text_file(str(latin1))["error"]
    assert read_text_file(str(tmp_path))["error"] == "is not a regular file"


@pytest.mark.parametrize("node_path, relative", [
    ("/etc/containerd/config.toml", "etc/containerd/config.toml"),
    ("/", ""),
    ("/etc/../etc/./cdi", "etc/cdi"),
    ("/../../etc/cdi", "etc/cdi"),  # `..` stops at the node's /
    ("etc/cdi", "etc/cdi"),  # relative: from the node's /
])
def test_host_path_maps_node_paths_under_the_root(tmp_path, node_path, relative):
    assert host_path(str(tmp_path), node_path) == (os.path.join(str(tmp_path), relative) if relative else str(tmp_path))
    assert host_path("/", node_path) == node_path  # on the node itself: unchanged


def test_host_path_follows_links_inside_the_root(tmp_path):
    host = tmp_path / "host"
    write(host / "etc/k3s/config.toml", "inside\n")
    (host / "etc/containerd").mkdir(parents=True)
    # Absolute targets restart at the node's /, never this machine's; relative ones resolve as usual, and
    # `..` stops at the node's /.
    (host / "etc/containerd/config.toml").symlink_to("/etc/k3s/config.toml")
    (host / "etc/containerd/rel.toml").symlink_to("../k3s/config.toml")
    (host / "etc/containerd/climb.toml").symlink_to("../../../../../../../../etc/k3s/config.toml")
    assert host_path(str(host), "/etc/containerd/climb.toml") == str(host / "etc/k3s/config.toml")
    (host / "loop").symlink_to("/loop")
    real = host_path(str(host), "/etc/containerd/config.toml")
    assert real == str(host / "etc/k3s/config.toml") and open(real).read() == "inside\n"
    assert host_path(str(host), "/etc/containerd/rel.toml") == str(host / "etc/k3s/config.toml")
    assert not os.path.exists(host_path(str(host), "/loop/x"))  # a loop gives up, as ELOOP would
    assert node_path_of(str(host), real) == "/etc/k3s/config.toml"
    assert node_path_of(str(host), str(host)) == "/" and node_path_of(str(host), "/elsewhere") == "/elsewhere"
    assert node_path_of("/", "/etc/cdi") == "/etc/cdi"


def test_a_chain_of_links_past_the_hop_limit_reads_nothing_outside_host_root(tmp_path):
    """41 relative links, the last one absolute to a 0600 file outside the node's root: nothing is read or shipped."""
    outside = tmp_path / "outside" / "secret.toml"
    outside.parent.mkdir()
    outside.write_text('version = 2\n# password = "outside-secret"\n')
    outside.chmod(0o600)
    host = tmp_path / "node"
    etc = host / "etc" / "containerd"
    etc.mkdir(parents=True)
    (etc / "config.toml").write_text('version = 2\nimports = ["/etc/containerd/l0.toml"]\n')
    for hop in range(41):
        (etc / f"l{hop}.toml").symlink_to(f"l{hop + 1}.toml")
    (etc / "l41.toml").symlink_to(outside)
    config_files, _globs = walk_imports("/etc/containerd/config.toml", str(host))
    imported = [entry for entry in config_files if entry["path"] == "/etc/containerd/l0.toml"]
    assert imported and imported[0]["text"] is None and "symbolic links" in imported[0]["error"]
    assert "outside-secret" not in json.dumps(config_files)


# --- commands: bounded in memory and time, with real processes (issue 22 item 4) -------------------------------------

def _alive(pid):
    """Whether ``pid`` still runs, once SIGKILL had up to 10 s to land (a zombie, not yet reaped, counts as gone)."""
    for _attempt in range(100):
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
                if handle.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return False
        except FileNotFoundError:
            return False
        time.sleep(0.1)
    return True


def test_output_past_the_cap_kills_the_command_while_reading(tmp_path):
    # `exec cat /dev/zero` as containerd: read whole, it took 2.9 GB before the cap was looked at.
    endless = executable(tmp_path / "containerd", "#!/bin/sh\nexec cat /dev/zero\n")
    rc, stdout, _stderr, error = run_command([endless, "config", "dump"], 30, max_bytes=1024 * 1024)
    assert (rc, stdout) == (None, b"")
    assert error == f"`{endless} config dump` printed more than 1048576 bytes, the limit: killed"


def test_a_grandchild_holding_stdout_is_killed_with_its_group_and_the_output_kept(tmp_path):
    # A wrapper that leaves `sleep infinity` behind with its stdout: communicate() waited for EOF past the timeout.
    pid_file = tmp_path / "grandchild.pid"
    wrapper = executable(tmp_path / "wrapper", f"#!/bin/sh\nsleep infinity &\necho $! > {pid_file}\necho 'version = 2'\n")
    rc, stdout, stderr, error = run_command([wrapper], 60)
    assert (rc, stdout, stderr, error) == (0, b"version = 2\n", "", None)
    assert not _alive(int(pid_file.read_text()))


def test_past_the_deadline_the_whole_group_is_killed(tmp_path):
    pid_file = tmp_path / "child.pid"
    hanging = executable(tmp_path / "hanging", f"#!/bin/sh\nsleep infinity &\necho $! > {pid_file}\nwait\n")
    rc, _stdout, _stderr, error = run_command([hanging], 1)
    assert rc is None and error == f"`{hanging}` did not finish within 1 seconds"
    assert not _alive(int(pid_file.read_text()))


def test_one_deadline_covers_the_dump_and_the_version(tmp_path):
    # The version never answers, the dump does: both share the node task's deadline and the dump is still judged.
    fake = executable(tmp_path / "containerd", '#!/bin/sh\n[ "$1" = --version ] && exec sleep infinity\necho "version = 2"\n')
    params = {"containerd_bin": fake, "config_path": "/etc/containerd/config.toml", "dump_file": None, "timeout": 2,
              "dropin_dirs": [], "cdi_spec_dirs": [], "ask_daemon": False, "socket": "/nonexistent.sock",
              "crictl_bin": "crictl", "host_root": None}
    evidence, error = gather(params)
    assert error is None and evidence["dump_text"] == "version = 2\n" and evidence["version_text"] is None


def test_the_cri_status_call_shares_the_node_task_deadline(tmp_path):
    # crictl kept its own timeout (timeout + 5 s after the dump's): the node task took up to twice its timeout. The
    # version uses the whole deadline here, so nothing is left for crictl: the daemon is not asked, and the crictl that
    # would hang is never started.
    started = tmp_path / "crictl-started"
    fake = executable(tmp_path / "containerd", '#!/bin/sh\n[ "$1" = --version ] && exec sleep infinity\necho "version = 2"\n')
    crictl = executable(tmp_path / "crictl", f"#!/bin/sh\ntouch {started}\nexec sleep infinity\n")
    socket = tmp_path / "containerd.sock"
    socket.write_text("")
    params = {"containerd_bin": fake, "config_path": "/etc/containerd/config.toml", "dump_file": None, "timeout": 2,
              "dropin_dirs": [], "cdi_spec_dirs": [], "ask_daemon": True, "socket": str(socket),
              "crictl_bin": crictl, "host_root": None}
    evidence, error = gather_node_evidence(params)
    assert error is None and evidence["dump_text"] == "version = 2\n"
    assert evidence["daemon"]["source"] is None and not started.exists()
    assert evidence["daemon"]["error"] == ("not asked: the node task's 2 seconds (timeout) ran out before the daemon "
                                           "could be asked")
