"""A dump is judged by itself: `bin/rc-crosscheck DUMP` never borrows this machine's containerd or files.

The dumps are printed at test time by the real 2.2.9 and 1.7.35 binaries (tests/support/containerd_trees.py); this
machine runs Debian's containerd 1.6.20, whose version must appear nowhere in the judgement of a 2.2 dump.
"""
import os
import subprocess

from support.containerd_trees import dumped
from support.paths import REPO_ROOT

RC_CROSSCHECK = REPO_ROOT / "bin" / "rc-crosscheck"
CLASSES = """\
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: nvidia}
handler: nvidia
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: gvisor}
handler: gvisor
"""


def run(tmp_path, *arguments):
    classes = tmp_path / "classes.yaml"
    classes.write_text(CLASSES)
    return subprocess.run([str(RC_CROSSCHECK), *map(str, arguments), "--runtimeclasses", str(classes), "--explain"],
                          capture_output=True, text=True, check=False, cwd="/")


def test_a_2_2_dump_alone_is_judged_as_2_x_and_reads_no_file_of_this_machine(tmp_path):
    dump = dumped("S1", "2.2", tmp_path)
    completed = run(tmp_path, dump.path)
    assert completed.returncode == 1, completed.stderr
    assert completed.stdout.splitlines()[0] == "MISSING=gvisor"
    # Version 3 dump → 2.0-2.2, said as inferred; no 1.x rule, no claim about files nobody read.
    assert "1.6.20" not in completed.stdout
    for code in ("V3_CONFIG_ON_1X", "CRI_TABLE_REPLACED", "NOT_CONFIGURED_ANYWHERE"):
        assert code not in completed.stdout


def test_the_version_file_beside_the_dump_names_the_exact_release(tmp_path):
    dump = dumped("S3full", "1.7", tmp_path)
    dump.write_version_file()
    completed = run(tmp_path, dump.path, "--host-root", dump.node_root)
    assert completed.returncode == 1, completed.stderr
    assert "containerd_version=1.7.35" in completed.stdout
    assert "version file" in completed.stdout and "1.6.20" not in completed.stdout
    # The node's files were examined (explicit host root): gvisor is configured nowhere.
    assert "gvisor: NOT_CONFIGURED_ANYWHERE" in completed.stdout


def test_a_stated_version_the_dump_contradicts_is_refused(tmp_path):
    dump = dumped("S1", "2.2", tmp_path)
    completed = run(tmp_path, dump.path, "--containerd-version", "1.6.20")
    assert completed.returncode == 2
    assert "not from the same containerd" in completed.stderr and "Traceback" not in completed.stderr


def test_a_dump_it_cannot_decide_exits_2_with_the_reason_on_stderr_and_nothing_on_stdout(tmp_path):
    # A 1.7 version 2 root disabling CRI by URI: the dump prints version = 2 either way, so alone it cannot say whether
    # the CRI plugin starts (issue 22 item 9: this printed UNKNOWN=… on stdout with exit 1, which means MISSING).
    root = 'version = 2\ndisabled_plugins = ["io.containerd.grpc.v1.cri"]\n'
    dump = dumped("S6-v2", "1.7", tmp_path, extra={"config.toml": root})
    assert dump.returncode == 0, dump.stderr
    completed = run(tmp_path, dump.path)
    assert (completed.returncode, completed.stdout) == (2, ""), completed.stdout
    assert completed.stderr.startswith("rc-crosscheck: UNKNOWN=disabled_plugins"), completed.stderr


def test_a_server_dribbling_its_headers_ends_in_exit_2_not_an_abort(tmp_path, kube_api):
    # Issue 22 item 10: the thread given up on at the deadline woke at interpreter shutdown: exit 134, Fatal Python error.
    kube_api.set_objects(runtimeclasses=[])
    kube_api.drip("runtimeclasses", phase="headers", interval=0.05, stop_after=20)
    dump = dumped("S6-v2", "1.7", tmp_path)
    environ = dict(os.environ, RUNTIME_GATE_REQUEST_DEADLINE="1")
    completed = subprocess.run([str(RC_CROSSCHECK), "--kubeconfig", str(kube_api.kubeconfig_path), str(dump.path)],
                               capture_output=True, text=True, check=False, cwd="/", env=environ, timeout=60)
    assert (completed.returncode, completed.stdout) == (2, ""), completed.stderr
    assert "did not arrive within 1 s (request_deadline" in completed.stderr and "Fatal" not in completed.stderr
