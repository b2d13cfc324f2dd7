"""The Nodes' status as first witness, checked against the real kubelets: crosscheck.yml judging each real node from
its Node's ``status.runtimeHandlers`` (``node-status``, no connection) gives the verdict that judging it from its own
files and daemon (``ssh``) gives, and ``hybrid`` ends with the same verdicts, each from the source it documents.

One real control plane (no kwok) and two real kubelets v1.34.4 (support/real_nodes.py) on containerd 2.4 and 2.2,
which report the handlers their CRI serves; RuntimeClasses ``nvidia`` and ``nvidia-cdi``, no nodeSelector:

| node | containerd | serves | verdict |
|---|---|---|---|
| ``eq-24`` | 2.4 | runc, nvidia | MISSING ``nvidia-cdi`` |
| ``eq-22`` | 2.2 | runc, nvidia, nvidia-cdi | OK, then (nvidia removed, containerd restarted) MISSING ``nvidia`` |

After the restart the Node's list lags the daemon by one kubelet status update (docs/usage.md, "The restart window"):
the test waits, with a deadline, until the Node's list equals what the daemon itself serves (``crictl info``), then
compares the modes again.

Time: about 2 minutes on a loaded 2-core machine (cluster and nodes up in about 20 s; six ansible-playbook runs).
"""
import json
import time
from pathlib import Path

import pytest
from support.containerd_daemons import releases
from support.seed_lab import NVIDIA, NVIDIA_CDI, crosscheck_hosts, root_config, run_playbook, running_lab

CLASSES = {"nvidia": "nvidia", "nvidia-cdi": "nvidia-cdi"}
# The kubelet follows a restart in 4.7-7.8 s here (test_seed_lab.py); the deadline leaves room for a loaded machine.
SETTLE_SECONDS = 90


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """``{"cluster", "nodes": {name: RealNode}, "work"}``; everything stopped after the module, and checked stopped."""
    release_of = {release.name: release for release in releases()}
    trees = {"eq-24": (release_of["2.4"], {"config.toml": root_config(release_of["2.4"], NVIDIA)}),
             "eq-22": (release_of["2.2"], {"config.toml": root_config(release_of["2.2"], NVIDIA + NVIDIA_CDI)})}
    with running_lab(tmp_path_factory.mktemp("node-status-equality"), trees, CLASSES) as started:
        yield started


def run_crosscheck(lab, out: Path, verdict_source):
    """playbooks/crosscheck.yml over the real nodes in ``verdict_source`` mode: their trees (host_root) run by their own
    containerd release, their daemons asked on their sockets, the cluster read with the admin kubeconfig.
    (host -> verdict, the completed run)."""
    return run_playbook(lab, out, "crosscheck.yml", crosscheck_hosts(lab["nodes"]),
                        {"runtime_gate_verdict_source": verdict_source})


def outcome(verdict):
    return verdict["status"], verdict["missing_handlers"]


def listed_by_node(cluster, name):
    """The handler names the Node's status lists (None: no list)."""
    handlers = (cluster.get("node", name).get("status") or {}).get("runtimeHandlers")
    return None if handlers is None else sorted(entry["name"] for entry in handlers)


def served_by_daemon(node):
    """The handler names the node's containerd itself serves now: its CRI status (``crictl info``), which the kubelet
    copies into the Node's status. crictl prints them beside ``status``, as Go's encoding/json marshals the CRI
    message (cri-tools v1.37.0, cmd/crictl/info.go): ``name`` is left out when empty, the default handler."""
    info = json.loads(node.crictl("info").stdout)
    assert "runtimeHandlers" in info, f"{node.name}: crictl info without runtimeHandlers: {sorted(info)}"
    return sorted(entry.get("name", "") for entry in info["runtimeHandlers"])


def settle(lab):
    """Wait (deadline SETTLE_SECONDS) until every Node's status lists what its daemon serves."""
    for name, node in lab["nodes"].items():
        started = time.monotonic()
        lab["cluster"].wait_for(f"status.runtimeHandlers of {name} equal to its daemon's",
                                lambda node=node, name=name: listed_by_node(lab["cluster"], name) == served_by_daemon(node),
                                SETTLE_SECONDS, interval=0.5)
        print(f"\n{name}: Node status equal to the daemon's handlers after {time.monotonic() - started:.1f} s")


def judge_every_way(lab, label):
    """{mode: (verdicts, run)} for ssh, node-status and hybrid, after the Nodes' status settled."""
    settle(lab)
    return {mode: run_crosscheck(lab, lab["work"] / f"{label}-{mode}", mode) for mode in ("ssh", "node-status", "hybrid")}


def assert_equal_verdicts(runs, expected):
    ssh, _ssh_run = runs["ssh"]
    from_status, status_run = runs["node-status"]
    hybrid, hybrid_run = runs["hybrid"]
    # The node's own evidence is the truth the other modes are measured against.
    assert {host: outcome(verdict) for host, verdict in ssh.items()} == expected, ssh
    assert all(verdict["verdict_source"] == "node" for verdict in ssh.values()), ssh
    # node-status: the same verdict per node, every one from the Node's status, no node contacted.
    assert {host: outcome(verdict) for host, verdict in from_status.items()} == expected, status_run.stdout[-3000:]
    assert all(verdict["verdict_source"] == "node-status" for verdict in from_status.values()), from_status
    # hybrid: the same verdicts; the OK ones from the status, the MISSING ones explained from the node.
    assert {host: outcome(verdict) for host, verdict in hybrid.items()} == expected, hybrid_run.stdout[-3000:]
    assert {host: verdict["verdict_source"] for host, verdict in hybrid.items()} == {
        host: "node-status" if status == "OK" else "node" for host, (status, _missing) in expected.items()}, hybrid
    expected_exit = 0 if all(status == "OK" for status, _missing in expected.values()) else 2
    assert (_ssh_run.returncode, status_run.returncode, hybrid_run.returncode) == (expected_exit,) * 3


def test_node_status_verdicts_equal_the_nodes_own(lab):
    runs = judge_every_way(lab, "before")
    assert_equal_verdicts(runs, {"eq-24": ("MISSING", ["nvidia-cdi"]), "eq-22": ("OK", [])})

    # eq-22 loses nvidia; containerd restarts. The status lags (the restart window), so the test waits for it to settle.
    node = lab["nodes"]["eq-22"]
    config = node.node_root / "etc" / "containerd" / "config.toml"
    config.write_text(config.read_text(encoding="utf-8").replace(NVIDIA, ""), encoding="utf-8")
    node.restart_containerd()
    runs = judge_every_way(lab, "after")
    assert_equal_verdicts(runs, {"eq-24": ("MISSING", ["nvidia-cdi"]), "eq-22": ("MISSING", ["nvidia"])})
