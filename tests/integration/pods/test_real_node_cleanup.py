"""A real node leaves nothing running, even when the test process dies without cleaning up.

A child Python starts a control plane (no kwok) and one real node (containerd 2.4 and the kubelet, a pod running),
prints every PID of the node (support.real_nodes.RealNode.processes: what it started, the namespace's pid 1, their
descendants: containerd, kubelet, shim, pause, workload) and of the cluster, and is then SIGKILLed — no finally, no
teardown. The kernel must end all of them (``setpriv --pdeathsig KILL``, ``unshare --kill-child``, the PID namespace).
About 20 s.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from support.paths import REPO_ROOT

CHILD = r"""
import json, sys, time
from pathlib import Path
sys.path[:0] = [sys.argv[2]]
from support.containerd_daemons import releases
from support.kube_cluster import start_cluster
from support.oci_images import WORKLOAD_IMAGE
from support.real_nodes import cri_base, start_real_node
work = Path(sys.argv[1])
release = next(release for release in releases() if release.name == "2.4")
(work / "node" / "etc" / "containerd").mkdir(parents=True)
(work / "node" / "etc" / "containerd" / "config.toml").write_text("version = 2\n" + cri_base(release))
cluster = start_cluster(work / "cluster", kwok=False)
node = start_real_node(cluster, "doomed", release, work / "node")
cluster.namespace("doomed")
cluster.apply_objects({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "w", "namespace": "doomed"},
                       "spec": {"nodeName": "doomed", "automountServiceAccountToken": False,
                                "containers": [{"name": "w", "image": WORKLOAD_IMAGE, "imagePullPolicy": "Never"}]}})
cluster.wait_for("the pod Running", lambda: cluster.get("pod", "w", "-n", "doomed")["status"].get("phase") == "Running", 90)
pids = node.processes() + [component.process.pid for component in cluster.components.values()]
print(json.dumps({"work": str(node.work), "pids": pids, "names": {pid: Path(f"/proc/{pid}/comm").read_text().strip() for pid in pids}}), flush=True)
time.sleep(600)
"""


def alive(pid):
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_killed_test_process_leaves_no_node_process(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path), str(REPO_ROOT / "tests")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        line = child.stdout.readline()
        assert line, f"the child did not start its node:\n{child.stderr.read()[-4000:] if child.poll() is not None else ''}"
        started = json.loads(line)
        names = set(started["names"].values())
        assert {"containerd", "kubelet", "containerd-shim", "pause", "workload"} <= names or \
            {"containerd", "kubelet", "pause", "workload"} <= names, names
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    deadline = time.monotonic() + 20
    while (left := [pid for pid in started["pids"] if alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, {pid: started["names"][str(pid)] for pid in left}
    shutil.rmtree(started["work"], ignore_errors=True)  # the node's work directory, which the killed child kept
