"""Real Kubernetes nodes for the cluster tests: a containerd release + the real kubelet, in namespaces of the test's own.

A ``RealNode`` is a node tree (``<node_root>/etc/containerd`` as its /etc/containerd, ``<node_root>/usr/local`` as its
/usr/local, holding the runc shim, runc and the nvidia runtimes: ``install_node_binaries``) brought to life:

- one namespace set per node (``unshare --mount --net --pid --fork --kill-child --mount-proc``): pid 1 of the PID
  namespace is a shell that makes the mounts and the network, then sleeps; containerd and the kubelet are started into
  it with ``nsenter``, so they can be stopped and restarted alone. Killing pid 1 kills every process of the namespace
  (shims and pods included); ``setpriv --pdeathsig`` and ``--kill-child`` tie pid 1 to the test process, so a killed
  pytest leaves nothing running either;
- mounts (private propagation, nothing outside changes): the tree at /etc/containerd, tmpfs at /run, /var/lib,
  /var/log and /opt; ``<work>/run`` at /run/containerd (so the socket shows outside as ``<work>/run/containerd.sock``),
  ``<work>/root`` at /var/lib/containerd, ``<work>/cni`` at /etc/cni/net.d (a bridge + host-local network of the
  node's own), Debian's /usr/lib/cni at /opt/cni/bin; the kernel sysctls the kubelet sets (``KERNEL_TUNABLES``) are
  files of ``<work>/sys`` bind-mounted over their /proc/sys entries, so its writes never reach the machine;
- network: loopback plus a veth pair whose end holds ``NODE_IP`` (the kubelet refuses a loopback node IP); the
  apiserver, on the machine's loopback, is reached through socat: ``127.0.0.1:6443`` in the namespace ->
  ``<work>/api.sock`` -> the apiserver's port outside;
- containerd: the release's binary on the tree (its runc shim first on PATH), run by a small supervisor (a shell loop,
  as systemd would be) that starts it again when ``restart_command()`` asked: the role's restart command; the images of
  tests/images imported with
  ``ctr --local`` (support/oci_images.py); the node's config pins the pause image as the sandbox image, uses the
  native snapshotter and ``restrict_oom_score_adj`` (these machines drop CAP_SYS_RESOURCE), see ``cri_base``;
- kubelet v1.34.4 (``kubelet_config``): cgroupfs, no QoS cgroups, no node-allocatable enforcement, ``oomScoreAdj: 0``,
  a client certificate ``O=system:nodes, CN=system:node:<name>`` from the cluster's CA, anonymous read of its own API.

Ansible runs modules *inside* a node with ``python_interpreter()`` as the host's ``ansible_python_interpreter``: a
script that enters the node's mount, network and PID namespaces (``nsenter --target <pid1>``) before it execs the
controller's Python, so the modules (and the commands they run) see the node's own /etc/containerd, /run/containerd
socket and processes, while /tmp and /root (Ansible's temp files, the built binaries) stay the machine's.

docs/cluster-tests.md ("Real nodes") lists the walls each of these gets around.
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
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from support.containerd_daemons import Release, components
from support.kube_cluster import SETPRIV, Component, KubeCluster, write_kubeconfig
from support.oci_images import PAUSE_IMAGE, build_images
from support.tools import require_command, require_tool

NODE_IP = "10.250.0.1"
POD_SUBNET = "10.88.0.0/24"
API_PORT_INSIDE = 6443
NVIDIA_DIR = "/usr/local/nvidia/toolkit"
BOOT_SECONDS = 60
READY_SECONDS = 90
STOP_SECONDS = 15
# What the kubelet's setupKernelTunables wants (pkg/kubelet/cm/container_manager_linux.go, v1.34.4).
KERNEL_TUNABLES = {"vm/overcommit_memory": "1", "vm/panic_on_oom": "0", "kernel/panic": "10",
                   "kernel/panic_on_oops": "1", "kernel/keys/root_maxkeys": "1000000",
                   "kernel/keys/root_maxbytes": "25000000"}
CNI_CONFIG = {"cniVersion": "0.4.0", "name": "gate-pods", "plugins": [
    {"type": "bridge", "bridge": "gate-br0", "isGateway": True, "ipMasq": False,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": POD_SUBNET}]]}}]}

_NAMESPACE_SCRIPT = """
set -eu
work=$1 tree=$2 usr_local=$3
mount --bind "$tree" /etc/containerd
mount -t tmpfs tmpfs /run
mkdir -p /run/containerd
mount --bind "$work/run" /run/containerd
mount -t tmpfs tmpfs /var/lib
mkdir -p /var/lib/containerd /var/lib/kubelet
mount --bind "$work/root" /var/lib/containerd
mount --bind "$work/kubelet" /var/lib/kubelet
mount -t tmpfs tmpfs /var/log
mount --bind "$work/cni" /etc/cni/net.d
mount -t tmpfs tmpfs /opt
mkdir -p /opt/cni/bin
mount --bind /usr/lib/cni /opt/cni/bin
mount --bind "$usr_local" /usr/local
for entry in $(cd "$work/sys" && ls); do
    mount --bind "$work/sys/$entry" "/proc/sys/$(echo "$entry" | tr . /)"
done
ip link set lo up
ip link add gate0 type veth peer name gate1
ip addr add {node_ip}/32 dev gate0
ip link set gate0 up
ip link set gate1 up
socat TCP-LISTEN:{api_port},bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:"$work/api.sock" &
touch "$work/namespace-ready"
exec sleep infinity
""".replace("{node_ip}", NODE_IP).replace("{api_port}", str(API_PORT_INSIDE))


# containerd under a supervisor inside the node: started again only when the restart script asked (a marker file), so a
# containerd that exits by itself still ends the component (and a start-up wait sees it).
_SUPERVISOR_SCRIPT = """
pidfile=$1 request=$2
shift 2
while :; do
    rm -f "$request"
    "$@" &
    echo $! > "$pidfile"
    wait $!
    status=$?
    [ -e "$request" ] || exit $status
done
"""
# The node's restart command (what ``systemctl restart containerd`` is on a real node), run inside the node's namespaces:
# it asks the supervisor for a new start, stops the running containerd and returns once that one is gone.
_RESTART_SCRIPT = """#!/bin/sh
set -eu
pid=$(cat {pidfile})
touch {request}
kill "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
"""


def tools() -> dict:
    """Paths of what a real node runs; fails under CI (skips elsewhere) when one is missing."""
    require_tool(os.geteuid() == 0, "a real node (namespaces, mounts) needs root")
    built = components()
    found = {}
    for name in ("kubelet", "ctr", "crictl"):
        entry = built.get(name)
        require_tool(entry is not None and os.access(entry["path"], os.X_OK),
                     f"{name} is not built: run tools/build-components {name} (make test does)")
        found[name] = entry["path"]
    found["runc"] = require_command("runc", "runc")
    found["socat"] = require_command("socat", "socat")
    require_tool(os.access("/usr/lib/cni/bridge", os.X_OK),
                 "/usr/lib/cni/bridge is missing: apt-get install containernetworking-plugins")
    require_tool(os.path.isdir("/etc/cni/net.d"), "/etc/cni/net.d must exist as a mount point (containernetworking-plugins)")
    return found


def cri_base(release: Release) -> str:
    """The CRI settings every real node's root config starts with (version 2 keys; 2.x migrates them)."""
    return (f'[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "{PAUSE_IMAGE}"\n'
            "  restrict_oom_score_adj = true\n"
            '[plugins."io.containerd.grpc.v1.cri".containerd]\n  snapshotter = "native"\n')


def runtime_wrapper(path: Path, target: str):
    """A binary of the node: a shell script that execs ``target`` (e.g. the nvidia runtimes' stand-in, exec'ing runc)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\nexec {target} "$@"\n', encoding="utf-8")
    path.chmod(0o755)


def install_node_binaries(node_root: Path, release: Release, runc: str):
    """The runtime binaries the node runs, as files of its tree (so the crosscheck, looking them up under host_root,
    sees what the daemon runs): ``usr/local/bin/containerd-shim-runc-v2`` (the release's own shim) and
    ``usr/local/sbin/runc`` (the machine's runc), each a script that execs the real one. The namespace mounts
    ``<node_root>/usr/local`` at /usr/local, first on containerd's PATH."""
    shim = os.path.join(os.path.dirname(release.binary), "containerd-shim-runc-v2")
    require_tool(os.access(shim, os.X_OK), f"{shim} is missing: rebuild {release} with tools/build-components")
    for relative, target in (("usr/local/bin/containerd-shim-runc-v2", shim), ("usr/local/sbin/runc", runc)):
        runtime_wrapper(node_root / relative, target)


def kubelet_config(name: str) -> dict:
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "address": NODE_IP, "port": 10250, "readOnlyPort": 0, "healthzBindAddress": "127.0.0.1", "healthzPort": 10248,
        "cgroupDriver": "cgroupfs", "cgroupsPerQOS": False, "enforceNodeAllocatable": [], "failSwapOn": False,
        "oomScoreAdj": 0, "protectKernelDefaults": False, "resolvConf": "",
        "containerRuntimeEndpoint": "unix:///run/containerd/containerd.sock",
        "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
        "authorization": {"mode": "AlwaysAllow"},
        "evictionHard": {"memory.available": "1Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
        "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
        "nodeStatusUpdateFrequency": "5s", "syncFrequency": "10s",
        "systemReserved": {"cpu": "100m", "memory": "100Mi"},
        "registerWithTaints": [], "serializeImagePulls": False,
        "featureGates": {}, "staticPodPath": "",
        "providerID": f"gate://{name}",
    }


@dataclass
class RealNode:
    name: str
    release: Release
    node_root: Path
    work: Path
    cluster: KubeCluster
    paths: dict
    namespace: Component | None = None
    bridge: Component | None = None
    containerd: Component | None = None
    kubelet: Component | None = None
    pid1: int | None = None
    started: list = field(default_factory=list)  # every process group this node started

    @property
    def socket(self) -> Path:
        return self.work / "run" / "containerd.sock"

    def _spawn(self, name, argv, env=None) -> Component:
        log_path = self.work / f"{name}.log"
        with open(log_path, "ab") as log, open(os.devnull, "rb") as devnull:
            process = subprocess.Popen([SETPRIV, "--pdeathsig", "KILL", "--", *argv], stdin=devnull, stdout=log,
                                       stderr=subprocess.STDOUT, cwd="/", start_new_session=True, env=env)
        self.started.append(process.pid)
        return Component(name, process, log_path)

    def _inside(self, name, argv, env=None) -> Component:
        return self._spawn(name, ["nsenter", "--target", str(self.pid1), "--mount", "--net", "--pid", "--", *argv], env)

    def _wait(self, what, probe, component, seconds):
        deadline = time.monotonic() + seconds
        while not probe():
            if component is not None and component.process.poll() is not None:
                raise AssertionError(f"{self.name}: {component.name} exited {component.process.returncode} before "
                                     f"{what}:\n{component.log_tail(30)}")
            if time.monotonic() > deadline:
                tail = component.log_tail(30) if component else ""
                raise AssertionError(f"{self.name}: {what} not within {seconds} s\n{tail}")
            time.sleep(0.1)

    # --- pieces -----------------------------------------------------------------------------------------------
    def start_namespace(self):
        for directory in ("run", "root", "kubelet", "cni", "sys", "pki"):
            (self.work / directory).mkdir(parents=True, exist_ok=True)
        (self.work / "cni" / "10-gate.conflist").write_text(json.dumps(CNI_CONFIG), encoding="utf-8")
        for key, value in KERNEL_TUNABLES.items():
            (self.work / "sys" / key.replace("/", ".")).write_text(value + "\n", encoding="utf-8")
        (self.node_root / "usr" / "local").mkdir(parents=True, exist_ok=True)
        port = self.cluster.server.rsplit(":", 1)[1]
        self.bridge = self._spawn("api-bridge", [self.paths["socat"], f"UNIX-LISTEN:{self.work / 'api.sock'},fork",
                                                 f"TCP:127.0.0.1:{port}"])
        self.namespace = self._spawn("namespace", [
            "unshare", "--mount", "--net", "--pid", "--fork", "--kill-child", "--mount-proc", "--propagation", "private",
            "--", "/bin/sh", "-c", _NAMESPACE_SCRIPT, "namespace", str(self.work),
            str(self.node_root / "etc" / "containerd"), str(self.node_root / "usr" / "local")])
        self._wait("its namespace", (self.work / "namespace-ready").exists, self.namespace, BOOT_SECONDS)
        children = Path(f"/proc/{self.namespace.process.pid}/task/{self.namespace.process.pid}/children")
        self.pid1 = int(children.read_text().split()[0])

    def start_containerd(self):
        env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root"}
        self.socket.unlink(missing_ok=True)
        self.containerd = self._inside("containerd", [
            "/bin/sh", "-c", _SUPERVISOR_SCRIPT, "supervisor", str(self.work / "containerd.pid"),
            str(self.work / "containerd.restart"), self.release.binary, "--config", "/etc/containerd/config.toml"], env)
        self._wait("containerd's socket", lambda: self.socket.exists() and self.ctr("version", check=False).returncode == 0,
                   self.containerd, BOOT_SECONDS)

    def stop_containerd(self):
        if self.containerd is not None:
            self.containerd.stop()
            self.started.remove(self.containerd.process.pid)
            self.containerd = None

    def restart_containerd(self):
        self.stop_containerd()
        self.start_containerd()

    def restart_command(self) -> list[str]:
        """argv that restarts this node's containerd from inside the node (a host's ``containerd_runtimes_restart_command``
        when its modules run there, ``python_interpreter()``); returns once the old daemon is gone."""
        script = self.work / "restart-containerd"
        script.write_text(_RESTART_SCRIPT.format(pidfile=self.work / "containerd.pid",
                                                 request=self.work / "containerd.restart"), encoding="utf-8")
        script.chmod(0o755)
        return [str(script)]

    def python_interpreter(self) -> str:
        """A host's ``ansible_python_interpreter`` that runs the module inside this node: its mount, network and PID
        namespaces entered, then the controller's Python (Ansible's temp files under /root and /tmp are the machine's)."""
        wrapper = self.work / "python"
        wrapper.write_text(f'#!/bin/sh\nexec nsenter --target {self.pid1} --mount --net --pid -- {sys.executable} "$@"\n',
                           encoding="utf-8")
        wrapper.chmod(0o755)
        return str(wrapper)

    def ctr(self, *args, check=True) -> subprocess.CompletedProcess:
        completed = subprocess.run([self.paths["ctr"], "--address", str(self.socket), "--namespace", "k8s.io", *args],
                                   capture_output=True, text=True, timeout=120, check=False, cwd="/")
        if check and completed.returncode != 0:
            raise AssertionError(f"{self.name}: ctr {' '.join(args)} exited {completed.returncode}: {completed.stderr}")
        return completed

    def crictl(self, *args, check=True) -> subprocess.CompletedProcess:
        completed = subprocess.run([self.paths["crictl"], "--runtime-endpoint", f"unix://{self.socket}", "--timeout",
                                    "20s", *args], capture_output=True, text=True, timeout=120, check=False, cwd="/",
                                   env=dict(os.environ, HOME=str(self.work)))
        if check and completed.returncode != 0:
            raise AssertionError(f"{self.name}: crictl {' '.join(args)} exited {completed.returncode}: {completed.stderr}")
        return completed

    def import_images(self):
        for tar in build_images().values():
            self.ctr("images", "import", "--local", "--snapshotter", "native", str(tar))

    def start_kubelet(self):
        pki = self.work / "pki"
        node_certificate(self.cluster.pki, pki, self.name)
        kubeconfig = write_kubeconfig(self.work / "kubelet.kubeconfig", f"https://127.0.0.1:{API_PORT_INSIDE}",
                                      self.cluster.ca_path, f"system:node:{self.name}", pki / "node.crt",
                                      pki / "node.key")
        config_path = self.work / "kubelet.yaml"
        config_path.write_text(yaml.safe_dump(kubelet_config(self.name)), encoding="utf-8")
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root"}
        self.kubelet = self._inside("kubelet", [
            self.paths["kubelet"], f"--config={config_path}", f"--kubeconfig={kubeconfig}",
            f"--hostname-override={self.name}", f"--node-ip={NODE_IP}", f"--cert-dir={self.work / 'kubelet-certs'}",
            "--v=2"], env)

    # --- whole node -------------------------------------------------------------------------------------------
    def stop(self):
        """SIGKILL every process group this node started, the namespace's first: its pid 1 dies, and the kernel kills
        whatever else runs in the PID namespace (kubelet, containerd, shims, pods). A test node keeps nothing worth a
        graceful stop, and this takes no time."""
        groups = [self.namespace.process.pid] if self.namespace else []
        for pgid in groups + [pgid for pgid in self.started if pgid not in groups]:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.pid1:
            try:
                os.kill(self.pid1, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for component in (self.namespace, self.kubelet, self.containerd, self.bridge):
            if component is not None and component.process.poll() is None:
                component.process.wait(timeout=STOP_SECONDS)
        # The namespace's pid 1 is no child of ours, and the kernel ends the rest of the namespace asynchronously: wait.
        deadline = time.monotonic() + STOP_SECONDS
        while self.leftovers() and time.monotonic() < deadline:
            time.sleep(0.1)

    def processes(self) -> list[int]:
        """Every live PID of this node: what it started, the namespace's pid 1, and all their descendants."""
        found, queue = set(), [*self.started, *([self.pid1] if self.pid1 else [])]
        while queue:
            pid = queue.pop()
            if pid in found or not Path(f"/proc/{pid}").exists():
                continue
            found.add(pid)
            for children in Path(f"/proc/{pid}/task").glob("*/children"):
                try:
                    queue.extend(int(child) for child in children.read_text().split())
                except OSError:
                    pass
        return sorted(found)

    def leftovers(self) -> list[int]:
        """PIDs still alive of what this node started (its process groups, and the namespace's pid 1)."""
        alive = []
        for pid in [*self.started, *([self.pid1] if self.pid1 else [])]:
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z":
                alive.append(pid)
        return alive


def node_certificate(cluster_pki: Path, directory: Path, name: str):
    """A kubelet client certificate (``O=system:nodes, CN=system:node:<name>``) signed by the cluster's CA."""
    def openssl(*args):
        completed = subprocess.run(["openssl", *args], cwd=directory, capture_output=True, text=True, check=False)
        if completed.returncode != 0:
            raise AssertionError(f"openssl {' '.join(args)} failed: {completed.stderr}")
    (directory / "node.ext").write_text("extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n"
                                        "keyUsage=critical,digitalSignature\n", encoding="utf-8")
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "node.key",
            "-out", "node.csr", "-subj", f"/O=system:nodes/CN=system:node:{name}")
    openssl("x509", "-req", "-in", "node.csr", "-CA", str(cluster_pki / "ca.crt"), "-CAkey", str(cluster_pki / "ca.key"),
            "-CAcreateserial", "-CAserial", str(directory / "ca.srl"), "-out", "node.crt", "-days", "3",
            "-extfile", "node.ext")


def start_real_node(cluster: KubeCluster, name: str, release: Release, node_root: Path, work_parent="/tmp") -> RealNode:
    """Namespace, containerd (images imported) and kubelet for ``node_root``; returns once the kubelet registered the
    Node (not waiting for Ready: a node whose containerd serves no CRI never gets Ready, and that is a state to test).
    Stops what it started when a piece fails."""
    paths = tools()
    # Unix socket paths must fit in 108 bytes: a short directory.
    node = RealNode(name, release, Path(node_root), Path(tempfile.mkdtemp(prefix="rn-", dir=work_parent)), cluster, paths)
    try:
        install_node_binaries(node.node_root, release, paths["runc"])
        node.start_namespace()
        node.start_containerd()
        if node.ctr("plugins", "ls", check=False).returncode == 0:
            node.import_images()
        node.start_kubelet()
        node._wait("the Node registered by its kubelet",
                   lambda: cluster.kubectl("get", "node", name, check=False).returncode == 0, node.kubelet, READY_SECONDS)
    except BaseException:
        node.stop()
        raise
    return node


def remove_real_node(node: RealNode):
    node.stop()
    shutil.rmtree(node.work, ignore_errors=True)
