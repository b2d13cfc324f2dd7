"""A cluster file needs no kubernetes client: runtimeclass_info reading `src` on the controller neither imports the
client (about a second per run, benchmarks/README.md) nor needs it installed."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import yaml
from support.paths import REPO_ROOT

BIN = Path(sys.executable).parent
CLUSTER_FILE = REPO_ROOT / "inventory" / "demo" / "cluster.yaml"
PLAYBOOK = """\
- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
  tasks:
    - gpufleet.runtime_gate.runtimeclass_info:
        src: "%s"
        nodes: true
        pods: true
      register: cluster
    - ansible.builtin.copy:
        content: "{{ cluster | to_json }}"
        dest: "%s"
"""


def poisoned_kubernetes(directory, marker):
    """A `kubernetes` package first on sys.path that records each import in ``marker``, then fails as if absent."""
    package = directory / "kubernetes"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(textwrap.dedent(f"""\
        import os
        with open({str(marker)!r}, "a") as marker:
            marker.write("imported by pid %d\\n" % os.getpid())
        raise ImportError("kubernetes is not installed here (test)")
    """))
    return directory


def test_reading_a_file_imports_no_client_in_the_action():
    code = textwrap.dedent(f"""\
        import sys
        sys.path.insert(0, {str(REPO_ROOT / ".collections")!r})
        from ansible_collections.gpufleet.runtime_gate.plugins.action import runtimeclass_info
        from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.cluster_file import cluster_file_result
        result = cluster_file_result({str(CLUSTER_FILE)!r}, include_nodes=True, include_pods=True)
        assert result["runtimeclasses"], result
        print(sorted(name for name in sys.modules if name == "kubernetes" or name.startswith("kubernetes.")))
    """)
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert completed.stdout.strip() == "[]", completed.stdout


def test_a_real_run_reads_the_file_with_the_client_uninstalled(tmp_path):
    marker = tmp_path / "kubernetes-imported"
    shadow = poisoned_kubernetes(tmp_path / "shadow", marker)
    out = tmp_path / "cluster.json"
    playbook = tmp_path / "read.yml"
    playbook.write_text(PLAYBOOK % (CLUSTER_FILE, out))
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO_ROOT / "ansible.cfg"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
               ANSIBLE_NOCOLOR="1", PYTHONPATH=os.pathsep.join(filter(None, [str(shadow), os.environ.get("PYTHONPATH")])))
    completed = subprocess.run([BIN / "ansible-playbook", "-i", "localhost,", str(playbook)], cwd=REPO_ROOT, env=env,
                               capture_output=True, text=True, check=False, timeout=300)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    cluster = json.loads(out.read_text())
    expected = [item for item in yaml.safe_load(CLUSTER_FILE.read_text())["items"] if item["kind"] == "RuntimeClass"]
    assert sorted(rc["name"] for rc in cluster["runtimeclasses"]) == sorted(item["metadata"]["name"] for item in expected)
    assert cluster["source"] == {"type": "file", "path": str(CLUSTER_FILE)}
    assert cluster["nodes"] and cluster["api_requests"] == 0
    assert not marker.exists(), marker.read_text()
