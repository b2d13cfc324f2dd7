"""The socket a loaded configuration names, read from real `config dump` output of every release (issue 23 item 3),
and the default wait command, whose every attempt real ctr binaries end by themselves."""
import shutil
import socket
import subprocess

import pytest
from support.containerd_daemons import RELEASE_NAMES, components
from support.containerd_trees import release_named
from support.tools import require_tool

from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.loaded_config import LoadedConfig
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.address import (
    DEFAULT_ADDRESS,
    daemon_endpoints,
    grpc_address,
    wait_command,
)

ROOTS = {
    2: 'version = 2\n[grpc]\n  address = "{sock}"\n',
    3: 'version = 3\n[grpc]\n  address = "{sock}"\n',
    4: 'version = 4\n[plugins."io.containerd.server.v1.grpc"]\n  address = "{sock}"\n',
}


def _dump(binary, config):
    completed = subprocess.run([binary, "--config", str(config), "config", "dump"], capture_output=True, text=True,
                               timeout=60, check=False, cwd="/")
    assert completed.returncode == 0, completed.stderr
    return LoadedConfig(completed.stdout, f"the dump of {config}")


@pytest.mark.parametrize("release_name", RELEASE_NAMES)
@pytest.mark.components
def test_the_address_of_every_file_version_a_release_reads(release_name, tmp_path):
    """1.x reads version 2; 2.2 versions 2-3; 2.3+ 2-4 (a version 3 [grpc] migrated to the v4 plugin table)."""
    release = release_named(release_name)
    major, minor = (int(part) for part in release.name.split("."))
    versions = [2] if major < 2 else [2, 3] if (major, minor) < (2, 3) else [2, 3, 4]
    for version in versions:
        sock = f"{tmp_path}/v{version}.sock"
        (tmp_path / "config.toml").write_text(ROOTS[version].format(sock=sock))
        assert grpc_address(_dump(release.binary, tmp_path / "config.toml")) == sock, (release, version)
    (tmp_path / "config.toml").write_text(f"version = {versions[-1]}\n")
    assert grpc_address(_dump(release.binary, tmp_path / "config.toml")) == DEFAULT_ADDRESS


def test_the_inputs_win_and_the_rollback_waits_on_todays_address():
    endpoints = daemon_endpoints(socket="", wait=[], current=LoadedConfig('[grpc]\naddress = "/a.sock"\n', "today's dump"),
                                 candidate=LoadedConfig('[plugins."io.containerd.server.v1.grpc"]\naddress = "/b.sock"\n',
                                                        "the candidate's dump"))
    bounded = ["--connect-timeout", "1s", "--timeout", "1s"]
    assert endpoints == {"socket": "/b.sock", "wait_command": ["ctr", "--address", "/b.sock", *bounded, "version"],
                         "restored_socket": "/a.sock", "restored_wait_command": ["ctr", "--address", "/a.sock", *bounded, "version"]}
    given = daemon_endpoints(socket="/k3s.sock", wait=["true"], current=None, candidate=None)
    assert given["socket"] == given["restored_socket"] == "/k3s.sock" and given["wait_command"] == ["true"]


def _ctr_binaries():
    debian = shutil.which("ctr")
    built = components().get("ctr")
    require_tool(debian is not None, "Debian's ctr (package containerd) is not installed: run `make test`")
    require_tool(built is not None, "ctr is not built: run tools/build-components (make test does)")
    return {"debian": debian, "built": built["path"]}


@pytest.mark.components
@pytest.mark.parametrize("which", ["debian", "built"])
def test_each_wait_attempt_ends_by_itself_on_a_socket_that_never_answers(which, tmp_path):
    """A socket that accepts and never answers (a daemon hung at start): without --connect-timeout ctr 1.6 to 2.4 waits
    10 s per attempt, so the role's wait of N attempts a second apart took about 11 N seconds. The subprocess bound
    here is only a backstop far above the attempt's own 1 s limit; the assertion is that ctr ended by itself, failing."""
    ctr = _ctr_binaries()[which]
    path = tmp_path / "hung.sock"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(path))
        listener.listen(8)
        argv = wait_command(str(path))
        argv[0] = ctr
        completed = subprocess.run(argv, capture_output=True, text=True, timeout=8, check=False)
    # What ctr prints varies (a dial deadline, a closed connection); that it ended by itself, failing, is the point.
    assert completed.returncode != 0, completed
