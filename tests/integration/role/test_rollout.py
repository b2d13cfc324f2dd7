"""playbooks/rollout.yml over a local multi-host fleet with the real containerd 1.6 and real ansible-playbook.

Real: containerd 1.6 (candidate proofs, containerd_facts after the restart), ansible-playbook with serial
batches and max_fail_percentage 0, the kubernetes client against the HTTPS API stand-in
(tests/support/kube_standin.py) for the cluster step. Not real: systemd (service-standin logs restarts).
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import yaml
from support.deprecations import collection_deprecations
from support.kube_fixtures import node, runtimeclass
from support.paths import REPO_ROOT
from support.tools import require_command

from . import _support as s

ROLLOUT = REPO_ROOT / "playbooks" / "rollout.yml"
HOSTS = ("node-1", "node-2", "node-3", "node-4", "node-5")  # serial [1, 2, 2]: {1} {2, 3} {4, 5}
BAD = "node-3"


def build(base: Path, hosts, bad=()):
    bin_dir = base / "bin"
    nvidia = s.make_executable(bin_dir / "nvidia-container-runtime", "#!/bin/sh\nexit 0\n")
    standin = s.service_standin(bin_dir)
    inventory_hosts = {}
    for host in hosts:
        files = {"config.toml": "version = 2\n\n" + s.RUNC_SYSTEMD}
        if host in bad:
            # A dormant file the new conf.d/*.toml import would load: it disables CRI, so the candidate fails.
            files["conf.d/00-off.toml"] = 'version = 2\ndisabled_plugins = ["io.containerd.grpc.v1.cri"]\n'
        s.write_tree(base / host, files)
        inventory_hosts[host] = {"containerd_runtimes_config_path": str(base / host / "config.toml"),
                                 "containerd_runtimes_dropin_dir": str(base / host / "conf.d"),
                                 "containerd_runtimes_restart_command": [str(standin), str(base / f"{host}.restarts"), "ok"]}
    s.write_inventory(base / "inventory.yml", inventory_hosts, {
        "containerd_runtimes_runtimes": [{"name": "nvidia", "binary_name": str(nvidia), "options": {"SystemdCgroup": True}}],
        "containerd_runtimes_wait_command": ["true"]})
    return {host: s.snapshot(base / host) for host in hosts}


def test_a_bad_node_in_batch_two_stops_the_rollout_and_batch_three_stays_untouched(tmp_path):
    require_command("containerd", "containerd")
    before = build(tmp_path, HOSTS, bad={BAD})
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [
        runtimeclass("nvidia", "nvidia"), *[node(host, {"nvidia.com/gpu.present": "true"}) for host in HOSTS]]}))
    run = s.run_playbook(ROLLOUT, tmp_path / "inventory.yml", "-e", f"runtime_gate_runtimeclasses_file={cluster}",
                         "-e", '{"runtime_gate_serial": ["1", "2", "2"], "runtime_gate_apply_runtimeclasses": true,'
                               ' "runtime_gate_runtimeclasses": [{"name": "nvidia", "handler": "nvidia"}]}')
    assert run.returncode != 0, run.explain()
    recap = run.recap()
    for host in ("node-1", "node-2"):
        assert recap[host]["failed"] == 0 and recap[host]["changed"] > 0, run.explain()
        assert (tmp_path / f"{host}.restarts").read_text() == "restart\n"
    assert recap[BAD]["failed"] == 1
    assert "the candidate configuration fails its proof" in run.failures(BAD)
    # Issue 23 item 7: the refusal is printed once, by the role's failed task; the summary and the last task point there.
    assert run.stdout.count("the candidate configuration fails its proof") == 1, run.explain()
    assert run.stdout.count("MISSING=nvidia: the candidate configuration does not load runtime 'nvidia'") == 1, run.explain()
    assert (f"{BAD}: the containerd_runtimes role failed; its message is printed above, under its failed task "
            f"(fatal: [{BAD}])") in run.stdout, run.explain()
    assert s.snapshot(tmp_path / BAD) == before[BAD]
    for host in ("node-4", "node-5"):  # batch 3: never contacted
        assert host not in recap, run.explain()
        assert s.snapshot(tmp_path / host) == before[host]
        assert not (tmp_path / f"{host}.restarts").exists()
    # The last table printed covers every host, judged against the cluster read by the first play; the cluster
    # step never ran.
    # Issues 13 item 10 and 23 item 7: a host of a batch that never ran is NOT_REACHED in the verdict column, not
    # UNKNOWN (nothing judged it) and not OK; the counts say so.
    for host in ("node-4", "node-5"):
        assert re.search(rf"^{host} +NOT_REACHED +- +its batch has not run: not changed and not judged$", run.stdout,
                         re.MULTILINE), run.explain()
    assert "2 OK, 1 MISSING, 0 UNKNOWN, 2 NOT_REACHED of 5 hosts" in run.stdout, run.explain()
    assert not re.search(r"^node-[45] +UNKNOWN ", run.stdout, re.MULTILINE), run.explain()
    assert re.search(r"^node-1 +OK ", run.stdout, re.MULTILINE), run.explain()
    assert "CLUSTER_NOT_READ" not in run.stdout and "could not be read" not in run.stdout, run.explain()
    assert "Apply the RuntimeClasses" not in run.stdout
    # Issue 26: the collection's own playbook uses no deprecated option of the collection.
    assert collection_deprecations(run.stdout + run.stderr) == [], run.explain()


def test_an_unchanged_host_that_does_not_pass_fails_its_batch(tmp_path):
    """Files already in place (an earlier run), but the cluster now requires a handler the role does not give."""
    require_command("containerd", "containerd")
    hosts = ("node-1", "node-2")  # serial [1, 1]
    build(tmp_path, hosts)
    cluster = tmp_path / "cluster.yaml"
    classes = [runtimeclass("nvidia", "nvidia")]
    nodes = [node(host, {"nvidia.com/gpu.present": "true"}) for host in hosts]
    serial = ["-e", '{"runtime_gate_serial": ["1", "1"]}']
    cluster.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [*classes, *nodes]}))
    # Issue 23 item 7: in check mode the summary says what each host would become, from its proven candidate.
    check = s.run_playbook(ROLLOUT, tmp_path / "inventory.yml", "--check", "-e", f"runtime_gate_runtimeclasses_file={cluster}",
                           *serial)
    assert check.returncode == 0, check.explain()
    for host in hosts:
        assert re.search(rf"^{host}: check mode: would change .*99-gpufleet.toml.*; the proven candidate serves nvidia, runc "
                         r"\(default runc\) with containerd 1\.6\.20$", check.stdout, re.MULTILINE), check.explain()
    # The table after batch 1 shows node-2 (batch 2) not reached, not UNKNOWN; the last one has every host judged.
    tables = check.stdout.split("TASK [Show the fleet summary]")[1:]
    assert len(tables) == 2, check.explain()
    assert re.search(r"^node-2 +NOT_REACHED +- +its batch has not run", tables[0], re.MULTILINE), check.explain()
    assert not re.search(r"^node-\d +(UNKNOWN|NOT_REACHED) ", tables[1].split("TASK [")[0], re.MULTILINE), check.explain()
    first = s.run_playbook(ROLLOUT, tmp_path / "inventory.yml", "-e", f"runtime_gate_runtimeclasses_file={cluster}", *serial)
    assert first.returncode == 0, first.explain()
    applied = {host: s.snapshot(tmp_path / host) for host in hosts}
    cluster.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [
        *classes, runtimeclass("nvidia-cdi", "nvidia-cdi"), *nodes]}))
    run = s.run_playbook(ROLLOUT, tmp_path / "inventory.yml", "-e", f"runtime_gate_runtimeclasses_file={cluster}", *serial)
    assert run.returncode != 0, run.explain()
    recap = run.recap()
    assert recap["node-1"]["changed"] == 0 and recap["node-1"]["failed"] == 1, run.explain()
    assert "MISSING=nvidia-cdi" in run.failures("node-1")
    assert "node-2" not in recap, run.explain()  # batch 2 never contacted
    assert {host: s.snapshot(tmp_path / host) for host in hosts} == applied
    assert "CLUSTER_NOT_READ" not in run.stdout, run.explain()


def test_a_verified_rollout_creates_the_runtimeclass_through_the_api(tmp_path, kube_api):
    require_command("containerd", "containerd")
    hosts = ("node-1", "node-2")
    build(tmp_path, hosts)
    kube_api.set_objects(runtimeclasses=[], nodes=[node(host, {"nvidia.com/gpu.present": "true"}) for host in hosts])
    kubeconfig = kube_api.write_kubeconfig(tmp_path / "kubeconfig")
    run = s.run_playbook(ROLLOUT, tmp_path / "inventory.yml", "-e", '{"runtime_gate_serial": ["1", "1"],'
                         ' "runtime_gate_apply_runtimeclasses": true, "runtime_gate_runtimeclasses":'
                         ' [{"name": "nvidia", "handler": "nvidia", "node_selector": {"nvidia.com/gpu.present": "true"}}]}',
                         env={"K8S_AUTH_KUBECONFIG": str(kubeconfig)})
    assert run.returncode == 0, run.explain()
    assert [(item["metadata"]["name"], item["handler"]) for item in kube_api.stored("runtimeclasses")] == [("nvidia", "nvidia")]
    for host in hosts:
        assert s.dump(tmp_path / host / "config.toml")["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"][
            "nvidia"]["runtime_type"] == "io.containerd.runc.v2"


def test_the_example_inventory_gives_every_gpu_node_runtimes_with_handler_names(tmp_path):
    listed = subprocess.run([str(Path(sys.executable).with_name("ansible-inventory")), "-i",
                             str(REPO_ROOT / "inventory" / "example" / "hosts.yml"), "--list"],
                            capture_output=True, text=True, check=True, cwd=REPO_ROOT)
    hostvars = json.loads(listed.stdout)["_meta"]["hostvars"]
    gpu_nodes = json.loads(listed.stdout)["gpu_nodes"]["hosts"]
    assert gpu_nodes
    for host in gpu_nodes:
        names = [runtime["name"] for runtime in hostvars[host]["containerd_runtimes_runtimes"]]
        assert names and all(re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name) for name in names)
