"""bin/rc-crosscheck on a node whose containerd would not start (issue 22 item 1): never OK.

The node trees are run by the real containerd through inventory/demo/bin/containerd-at-etc, as the issue reported it
(Debian's 1.6.20 by default); tests/integration/daemon/test_daemon_startup_rules.py shows real daemons of every release
exit on the same files.
"""
import shutil
import subprocess

import pytest
from support.containerd_daemons import CONTAINERD_AT_ETC
from support.paths import REPO_ROOT
from support.tools import require_command

RC_CROSSCHECK = REPO_ROOT / "bin" / "rc-crosscheck"
CLASSES = "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: runc}\nhandler: runc\n"


def _judge(tmp_path, config, *extra):
    require_command("containerd", "containerd")
    (tmp_path / "etc" / "containerd").mkdir(parents=True)
    (tmp_path / "etc" / "containerd" / "config.toml").write_text(config)
    (tmp_path / "classes.yaml").write_text(CLASSES)
    # runc and its shim are on the node: only the start-up rule can keep runc from being served.
    (tmp_path / "usr" / "bin").mkdir(parents=True)
    for binary in ("runc", "containerd-shim-runc-v2"):
        shutil.copy("/bin/true", tmp_path / "usr" / "bin" / binary)
    return subprocess.run([str(RC_CROSSCHECK), "--host-root", str(tmp_path), "--containerd-bin", str(CONTAINERD_AT_ETC),
                           "--runtimeclasses", str(tmp_path / "classes.yaml"), "--explain", *extra],
                          capture_output=True, text=True, check=False, cwd="/")


def test_a_required_plugin_the_node_may_not_load_is_never_ok(tmp_path):
    completed = _judge(tmp_path, 'version = 2\nrequired_plugins = ["io.containerd.snapshotter.v1.zfs"]\n')
    assert completed.returncode != 0 and "OK" not in completed.stdout.splitlines(), completed
    assert "io.containerd.snapshotter.v1.zfs" in completed.stdout + completed.stderr
    assert "Traceback" not in completed.stderr


def test_the_dump_of_that_node_alone_is_never_ok(tmp_path):
    config = 'version = 2\nrequired_plugins = ["io.containerd.snapshotter.v1.zfs"]\n'
    (tmp_path / "etc" / "containerd").mkdir(parents=True)
    (tmp_path / "etc" / "containerd" / "config.toml").write_text(config)
    dump = subprocess.run([str(CONTAINERD_AT_ETC), "--config", str(tmp_path / "etc/containerd/config.toml"), "config", "dump"],
                          capture_output=True, text=True, check=True, cwd="/")
    (tmp_path / "dump.toml").write_text(dump.stdout)
    (tmp_path / "classes.yaml").write_text(CLASSES)
    completed = subprocess.run([str(RC_CROSSCHECK), str(tmp_path / "dump.toml"), "--runtimeclasses", str(tmp_path / "classes.yaml")],
                               capture_output=True, text=True, check=False, cwd="/")
    assert completed.returncode != 0 and "OK" not in completed.stdout.splitlines(), completed


@pytest.mark.parametrize("config", [
    'version = 2\nrequired_plugins = ["io.containerd.nosuch.v1.thing"]\n',
    'version = 2\nrequired_plugins = ["io.containerd.snapshotter.v1.native"]\ndisabled_plugins = ["io.containerd.snapshotter.v1.native"]\n',
    'version = 2\nroot = "/var/lib/containerd"\nstate = "/var/lib/containerd"\n',
])
def test_a_daemon_that_exits_serves_nothing_and_says_why(tmp_path, config):
    completed = _judge(tmp_path, config)
    assert completed.returncode == 1 and completed.stdout.splitlines()[0] == "MISSING=runc", completed
    assert "  runc: CONTAINERD_WILL_NOT_START" in completed.stdout.splitlines(), completed.stdout
