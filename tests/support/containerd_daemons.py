"""Real containerd releases, and real daemons started on a config tree in a private mount namespace.

Releases: Debian's containerd (1.6.20, /usr/bin/containerd) and the ones `tools/build-components` builds from the Go
module proxy into ~/.cache/gpufleet-runtime-gate (its ``components.json`` manifest), with the real crictl.

A daemon runs the tree ``<node>/etc/containerd`` as the node's /etc/containerd: ``unshare --mount`` with private
propagation, the tree bind-mounted at /etc/containerd, an empty tmpfs at /run (2.x's NRI socket, /var/run/nri, stays in
the namespace), a private directory at /run/containerd (state and sockets) and /var/lib/containerd (root), a tmpfs at
/opt. The config therefore names no private path: the daemon uses containerd's defaults, and its socket shows outside
the namespace at ``<work>/run/containerd.sock``. Nothing of this machine's own containerd configuration or state,
nor anything else under its /run, is read or written (tests/integration/daemon/test_private_namespace.py).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from support.paths import REPO_ROOT
from support.tools import require_tool

CACHE = Path(os.environ.get("RUNTIME_GATE_CACHE") or Path.home() / ".cache" / "gpufleet-runtime-gate")
MANIFEST = CACHE / "bin" / "components.json"
DEBIAN_CONTAINERD = "/usr/bin/containerd"
CONTAINERD_AT_ETC = REPO_ROOT / "inventory" / "demo" / "bin" / "containerd-at-etc"
BUILT_RELEASES = ("containerd-1.7", "containerd-2.0", "containerd-2.1", "containerd-2.2", "containerd-2.3", "containerd-2.4")
# Every release's name ("1.6", "2.4"), known without looking for the binaries (a parametrization at collection time).
RELEASE_NAMES = ("1.6", *(name.split("-", 1)[1] for name in BUILT_RELEASES))
BOOT_SECONDS = 30
STOP_SECONDS = 20


@dataclass(frozen=True)
class Release:
    name: str       # "1.6", "2.3"
    version: str    # "1.6.20", "2.3.4"
    binary: str

    def __str__(self):
        return self.version


def components() -> dict:
    """The manifest `tools/build-components` writes: name -> {path, module, version}."""
    if not MANIFEST.is_file():
        return {}
    return json.loads(MANIFEST.read_text(encoding="utf-8"))


def _version_of(binary: str) -> str:
    output = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True, timeout=30).stdout
    for word in output.split()[1:]:
        word = word.lstrip("v").split("~")[0]
        if word[:1].isdigit():
            return word
    raise RuntimeError(f"{binary} --version printed no version: {output!r}")


def releases() -> list[Release]:
    """Every containerd release the tests run: Debian's 1.6 and the built ones; fails (never skips) when one is absent."""
    found = []
    require_tool(os.access(DEBIAN_CONTAINERD, os.X_OK), f"{DEBIAN_CONTAINERD} is missing (tools/install-system-packages)")
    found.append(Release("1.6", _version_of(DEBIAN_CONTAINERD), DEBIAN_CONTAINERD))
    built = components()
    for name in BUILT_RELEASES:
        entry = built.get(name)
        require_tool(entry is not None and os.access(entry["path"], os.X_OK),
                     f"{name} is not built: run tools/build-components (make test does)")
        found.append(Release(name.split("-", 1)[1], entry["version"].lstrip("v"), entry["path"]))
    return found


def _built(name: str) -> str:
    entry = components().get(name)
    require_tool(entry is not None and os.access(entry["path"], os.X_OK), f"{name} is not built: run tools/build-components")
    return entry["path"]


def crictl() -> str:
    return _built("crictl")


def ctr() -> str:
    return _built("ctr")


def containerd_wrapper(release: Release, directory: Path) -> str:
    """A containerd_bin for this release that runs it on a node tree (RUNTIME_GATE_HOST_ROOT) via containerd-at-etc."""
    wrapper = directory / f"containerd-{release.version}"
    wrapper.write_text(f'#!/bin/sh\nCONTAINERD={release.binary} exec {CONTAINERD_AT_ETC} "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    return str(wrapper)


def config_dump(release: Release, node_root: Path) -> subprocess.CompletedProcess:
    """``containerd config dump`` of ``<node_root>/etc/containerd/config.toml`` as the node's /etc/containerd."""
    return subprocess.run([str(CONTAINERD_AT_ETC), "--config", str(node_root / "etc" / "containerd" / "config.toml"),
                           "config", "dump"], capture_output=True, text=True, timeout=60, cwd="/", check=False,
                          env=dict(os.environ, CONTAINERD=release.binary))


@dataclass
class Daemon:
    release: Release
    node_root: Path
    work_dir: Path
    process: subprocess.Popen

    @property
    def socket(self) -> Path:
        return self.work_dir / "run" / "containerd.sock"

    @property
    def log_path(self) -> Path:
        return self.work_dir / "containerd.log"

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def running(self) -> bool:
        return self.process.poll() is None

    def cri_info(self, crictl_bin: str) -> tuple[dict | None, str]:
        """(``crictl info`` JSON, or None when the CRI service does not answer; crictl's stderr)."""
        completed = subprocess.run([crictl_bin, "--runtime-endpoint", f"unix://{self.socket}", "--timeout", "10s", "info"],
                                   capture_output=True, text=True, timeout=60, cwd="/", check=False,
                                   env=dict(os.environ, HOME=str(self.work_dir)))
        if completed.returncode != 0:
            return None, completed.stderr.strip()
        return json.loads(completed.stdout), completed.stderr.strip()

    def cri_plugin_status(self) -> str | None:
        """The CRI service plugin's status (``ok``, ``error``, ``skip``) in the daemon's own plugin list (its
        introspection service, ``ctr plugins ls``), ``absent`` when the list lacks it (disabled, or never loaded), None
        when the daemon did not answer. The list is final once the daemon logged it booted (``start_daemon``): every
        plugin was loaded, or failed, by then."""
        completed = subprocess.run([ctr(), "--address", str(self.socket), "--connect-timeout", "10s", "plugins", "ls"],
                                   capture_output=True, text=True, timeout=60, cwd="/", check=False)
        if completed.returncode != 0:
            return None
        listed = {tuple(line.split()[:2]): line.split()[-1] for line in completed.stdout.splitlines()[1:] if line.strip()}
        return listed.get(CRI_SERVICE_PLUGIN, "absent")

    def stop(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=STOP_SECONDS)


_NAMESPACE_SCRIPT = """
set -eu
tree=$1 work=$2 bin=$3
mount --bind "$tree" /etc/containerd
# A private /run: 2.x's NRI binds /var/run/nri/nri.sock (a /run symlink), and runc keeps its state there.
mount -t tmpfs tmpfs /run
mkdir -p /run/containerd /var/lib/containerd
mount --bind "$work/run" /run/containerd
mount --bind "$work/root" /var/lib/containerd
mount -t tmpfs tmpfs /opt
cd /
if [ -n "${SANDBOX_NODE_ROOT:-}" ] && [ -d "$SANDBOX_NODE_ROOT/usr/bin" ]; then
    # Sandbox truth: the node tree's /usr/bin (its runc and runc shim) in front of the machine's, first on PATH.
    mount -t overlay overlay -o "lowerdir=$SANDBOX_NODE_ROOT/usr/bin:/usr/bin" /usr/bin
    PATH=/usr/bin:/bin
    export PATH
fi
exec "$bin" --config /etc/containerd/config.toml
"""


# A test daemon ends with the test process that started it, even one killed mid-run (it never calls stop): a watchdog in
# a session of its own kills the daemon's process group once that process is gone, and ends by itself once the group is.
# Not a parent-death signal: that fires when the *thread* that started the child ends, and the differential starts
# daemons from pool threads.
_WATCHDOG = """
import os, sys, time
owner, group = int(sys.argv[1]), int(sys.argv[2])
def alive(kill, target):
    try:
        kill(target, 0)
    except ProcessLookupError:
        return False
    return True
while alive(os.kill, owner) and alive(os.killpg, group):
    time.sleep(1)
if alive(os.killpg, group):
    os.killpg(group, 9)
"""


def _watch(group: int):
    """Start the watchdog of the daemon whose process group is ``group`` (its session leader's PID)."""
    subprocess.Popen([sys.executable, "-c", _WATCHDOG, str(os.getpid()), str(group)], start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/")


def start_daemon(release: Release, node_root: Path, work_parent: str = "/tmp", sandboxes: bool = False) -> Daemon:
    """Start ``release`` on the tree; returns once it booted or exited (a config it refuses ends it: check ``running()``).

    ``sandboxes``: the daemon will start pod sandboxes (support.differential's sandbox truth): it runs in a PID namespace
    of its own as well (its shims and sandboxes die with it), with the tree's ``usr/bin`` laid over /usr/bin (overlayfs,
    read-only) and PATH=/usr/bin:/bin, so the runc and shim it finds are the tree's."""
    require_tool(os.geteuid() == 0, "a containerd daemon in a private mount namespace needs root")
    require_tool(os.path.isdir("/etc/containerd"), "/etc/containerd must exist as the mount point")
    # Unix socket paths must fit in 108 bytes: a short directory.
    work_dir = Path(tempfile.mkdtemp(prefix="ctrd-", dir=work_parent))
    (work_dir / "run").mkdir()
    (work_dir / "root").mkdir()
    with open(work_dir / "containerd.log", "wb") as log, open(os.devnull, "rb") as devnull:
        namespaces = ["--mount", "--pid", "--fork", "--kill-child", "--mount-proc"] if sandboxes else ["--mount"]
        env = dict(os.environ, SANDBOX_NODE_ROOT=str(node_root)) if sandboxes else None
        process = subprocess.Popen(
            ["unshare", *namespaces, "--propagation", "private", "--", "/bin/sh", "-c", _NAMESPACE_SCRIPT, "daemon",
             str(node_root / "etc" / "containerd"), str(work_dir), release.binary],
            stdin=devnull, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd="/", env=env)
    _watch(process.pid)
    daemon = Daemon(release, node_root, work_dir, process)
    deadline = time.monotonic() + BOOT_SECONDS
    while "containerd successfully booted" not in daemon.log():
        if process.poll() is not None:
            return daemon
        if time.monotonic() > deadline:
            daemon.stop()
            raise RuntimeError(f"containerd {release} did not boot within {BOOT_SECONDS} s:\n{daemon.log()[-3000:]}")
        time.sleep(0.05)
    return daemon


def remove_daemon(daemon: Daemon):
    daemon.stop()
    shutil.rmtree(daemon.work_dir, ignore_errors=True)


CRI_QUERY_ATTEMPTS = 6
# The plugin that serves the CRI API (type, id), in every release.
CRI_SERVICE_PLUGIN = ("io.containerd.grpc.v1", "cri")


def cri_load_failures(log: str) -> list[str]:
    """The daemon's log lines saying a plugin failed to load ("failed to load plugin" … id=…)."""
    return [line[-400:] for line in log.splitlines() if "failed to load plugin" in line]


def served_by_daemon(daemon: Daemon, crictl_bin: str) -> dict:
    """What the real daemon serves: the ground truth of the differential tests.

    ``{"running", "cri", "runtimes": {name: runtimeType}, "served": [names], "default": name, "error"}``. A handler
    is served when the CRI service answers and lists it with a runtime type (an empty type names no shim: listed, but
    no sandbox of it can start).
    """
    if not daemon.running():
        return {"running": False, "cri": False, "runtimes": {}, "binaries": {}, "served": [], "default": None,
                "error": daemon.log()[-600:]}
    # The daemon's own plugin list decides first: without its CRI service plugin loaded (disabled, a dependency
    # disabled or failed: often logged nowhere) no CRI answers, and waiting for one would only wait out the attempts.
    status = daemon.cri_plugin_status()
    if status not in (None, "ok"):
        return {"running": True, "cri": False, "runtimes": {}, "binaries": {}, "served": [], "default": None,
                "error": "; ".join([f"the daemon's plugin list: {'.'.join(CRI_SERVICE_PLUGIN)} {status}",
                                    *cri_load_failures(daemon.log())])}
    for attempt in range(CRI_QUERY_ATTEMPTS):
        info, error = daemon.cri_info(crictl_bin)
        # The plugin loaded, CRI unanswered ("unknown service runtime.v1.RuntimeService"): not registered yet on a
        # loaded machine. Had the list not answered, only the daemon's own "failed to load plugin" proves CRI down.
        failures = cri_load_failures(daemon.log()) if status is None else []
        if info is not None or failures:
            break
        time.sleep(0.5 * (attempt + 1))
    if info is None:
        return {"running": True, "cri": False, "runtimes": {}, "binaries": {}, "served": [], "default": None,
                "error": "; ".join(failures) or f"no plugin failure logged, CRI still unanswered: {error}"}
    containerd = (info.get("config") or {}).get("containerd") or {}
    runtimes = {name: (table or {}).get("runtimeType") or "" for name, table in (containerd.get("runtimes") or {}).items()}
    binaries = {name: ((table or {}).get("options") or {}).get("BinaryName") or None
                for name, table in (containerd.get("runtimes") or {}).items()}
    return {"running": True, "cri": True, "runtimes": runtimes, "binaries": binaries, "default": containerd.get("defaultRuntimeName"),
            "served": sorted(name for name, runtime_type in runtimes.items() if runtime_type), "error": None}
