"""Per-node config trees, stand-ins and playbook runs for the role's integration tests.

Every host is played by this machine over the local connection; each has its own tree in a temp dir, with
absolute paths inside (``{tree}`` is replaced), so the real ``containerd --config <tree>/config.toml config
dump`` resolves its imports without a bind mount. Nothing here calls the collection's core: expectations
are written out, and dumps are parsed with ``tomllib`` directly.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import yaml
from support.console import printed_results
from support.paths import REPO_ROOT

NODE_PYTHON = "/usr/bin/python3"
CRI = '"io.containerd.grpc.v1.cri"'
RUNC_SYSTEMD = f"""[plugins.{CRI}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
  [plugins.{CRI}.containerd.runtimes.runc.options]
    SystemdCgroup = true
"""


@dataclass
class PlaybookRun:
    returncode: int
    stdout: str
    stderr: str

    def recap(self) -> dict:
        """``{host: {"ok": n, "changed": n, "failed": n, ...}}`` from the PLAY RECAP."""
        stats = {}
        for host, counters in re.findall(r"^(\S+)\s+:\s+(ok=.*)$", self.stdout, re.MULTILINE):
            stats[host] = {key: int(value) for key, value in re.findall(r"(\w+)=(\d+)", counters)}
        return stats

    def failures(self, host: str) -> str:
        """The ``msg`` of every ``fatal: [host]: FAILED!`` result printed for ``host``, decoded, joined."""
        return "\n".join(str(result.get("msg", "")) for result in printed_results(self.stdout, host)
                         if not result.get("unreachable"))

    def explain(self) -> str:
        return f"rc={self.returncode}\n--- stdout ---\n{self.stdout[-20000:]}\n--- stderr ---\n{self.stderr[-5000:]}"


def write_tree(tree: Path, files: dict):
    tree.mkdir(parents=True, exist_ok=True)
    for relative, text in files.items():
        path = tree / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace("{tree}", str(tree)), encoding="utf-8")


def snapshot(tree: Path) -> dict:
    """Every file under ``tree`` (path relative to it → bytes): proves "byte for byte" and "no new file"."""
    return {str(path.relative_to(tree)): path.read_bytes() for path in sorted(tree.rglob("*")) if path.is_file()}


def make_executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)
    return path


def service_standin(bin_dir: Path) -> Path:
    """Stand-in for `systemctl restart containerd` (no systemd here): logs each call to $1, then per mode $2
    succeeds, fails (every time, or ``fail-once``: only the first), or (``race``) writes file $3 with text $4 as another
    agent might during a restart."""
    return make_executable(bin_dir / "service-standin", """#!/bin/sh
log=$1 mode=$2
echo restart >> "$log"
case $mode in
  fail) echo "Job for containerd.service failed" >&2; exit 1 ;;
  fail-once) [ "$(wc -l < "$log")" -gt 1 ] || { echo "Job for containerd.service failed" >&2; exit 1; } ;;
  race) [ -e "$3" ] || printf '%s\\n' "$4" > "$3" ;;
esac
exit 0
""")


def dump(config_path: Path) -> dict:
    """The real ``containerd config dump`` of ``config_path``, parsed here with ``tomllib``."""
    completed = subprocess.run(["containerd", "--config", str(config_path), "config", "dump"], capture_output=True,
                               text=True, check=False, timeout=30, cwd="/")
    assert completed.returncode == 0, completed.stderr
    return tomllib.loads(completed.stdout)


def cri_runtimes(document: dict) -> dict:
    return document["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]


def write_inventory(path: Path, hosts: dict, group_vars: dict):
    # Every host is a tree on this machine: a containerd daemon running here must never be taken for a node's.
    inventory = {"all": {
        "hosts": {"localhost": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}},
        "children": {"gpu_nodes": {"vars": {"ansible_connection": "local", "ansible_python_interpreter": NODE_PYTHON,
                                            "containerd_runtimes_ask_daemon": False, "runtime_gate_ask_daemon": False,
                                            **group_vars},
                                   "hosts": hosts}}}}
    path.write_text(yaml.safe_dump(inventory, sort_keys=False), encoding="utf-8")


def run_playbook(playbook, inventory: Path, *args, wrapper=(), env=None, timeout=300) -> PlaybookRun:
    environment = dict(os.environ, **(env or {}), ANSIBLE_CONFIG=str(REPO_ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
                       ANSIBLE_FORCE_COLOR="0", ANSIBLE_LOCAL_TEMP=str(inventory.parent / "ansible-tmp"))
    command = [*wrapper, str(Path(sys.executable).with_name("ansible-playbook")), str(playbook), "-i", str(inventory), *args]
    completed = subprocess.run(command, cwd=REPO_ROOT, env=environment, capture_output=True, text=True,
                               timeout=timeout, check=False)
    return PlaybookRun(completed.returncode, completed.stdout, completed.stderr)


# A real restart: stop the daemon of PIDFILE, start BINARY on CONFIG again, wait until it booted.
RESTART_SCRIPT = """#!/bin/sh
# restart-containerd PIDFILE LOG BINARY CONFIG: stop the daemon, start it again on the files in place, wait for it.
pidfile=$1 log=$2 bin=$3 config=$4
echo restart >> "$pidfile.restarts"
if [ -s "$pidfile" ]; then
    kill "$(cat "$pidfile")" 2>/dev/null
    i=0; while kill -0 "$(cat "$pidfile")" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
fi
: > "$log"
setsid "$bin" --config "$config" >> "$log" 2>&1 < /dev/null &
echo $! > "$pidfile"
i=0
while [ $i -lt 300 ]; do
    grep -q "containerd successfully booted" "$log" && exit 0
    kill -0 "$(cat "$pidfile")" 2>/dev/null || { echo "containerd exited:" >&2; tail -5 "$log" >&2; exit 1; }
    sleep 0.1; i=$((i + 1))
done
echo "containerd did not boot" >&2
exit 1
"""


# The machine's own /run/containerd, hidden by an empty tmpfs for the playbook run (its private mount namespace): a
# role that fell back to the default socket finds nothing there, never another containerd.
HIDE_MACHINE_SOCKET = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                       'mount -t tmpfs tmpfs /run/containerd && exec "$@"', "hide-run-containerd"]
