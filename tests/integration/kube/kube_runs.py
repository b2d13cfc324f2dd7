"""Run the collection's Kubernetes modules and crosscheck.yml for real, against the API stand-in.

``run_module`` runs one module with ad-hoc ``ansible``; ``run_crosscheck`` runs playbooks/crosscheck.yml over
demo hosts whose committed dumps (real containerd 1.6.20 output) are judged against what the stand-in serves.
"""
import dataclasses
import json
import os
import subprocess
import sys

import yaml
from support.paths import REPO_ROOT

VENV_BIN = REPO_ROOT / ".venv" / "bin"
DEMO = REPO_ROOT / "inventory" / "demo"
# The demo hosts whose dumps serve every handler the demo cluster requires of them.
DEMO_OK_HOSTS = ["gpu-node-01", "gpu-node-06"]


@dataclasses.dataclass
class ModuleRun:
    returncode: int
    status: str
    result: dict
    output: str


@dataclasses.dataclass
class PlaybookRun:
    returncode: int
    output: str
    verdicts: dict
    written: dict  # path name -> text of every file the run wrote into its output directory


def ansible_env(**extra):
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("K8S_AUTH_") and key not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    env.update(ANSIBLE_CONFIG=str(REPO_ROOT / "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="ansible.builtin.minimal",
               ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="0")
    env.update({key: str(value) for key, value in extra.items()})
    return env


def run_module(module, args, env=None, check_mode=False, diff=False):
    module_args = json.dumps({key: str(value) if isinstance(value, os.PathLike) else value for key, value in args.items()})
    command = [str(VENV_BIN / "ansible"), "localhost", "-c", "local", "-i", "localhost,", "-m", module,
               "-e", f"ansible_python_interpreter={VENV_BIN / 'python'}"]
    command += (["-a", module_args] if args else []) + (["--check"] if check_mode else []) + (["--diff"] if diff else [])
    completed = subprocess.run(command, cwd=REPO_ROOT, env=env or ansible_env(), capture_output=True, text=True,
                               timeout=180, check=False)
    output = completed.stdout + completed.stderr
    answer = completed.stdout.partition("localhost | ")[2]
    status, arrow, payload = answer.partition(" => ")
    assert arrow, f"no module result in the ansible output:\n{output}"
    result = json.JSONDecoder().raw_decode(payload)[0]
    return ModuleRun(completed.returncode, status, result, output)


def assert_one_clear_failure(run, *fragments, secrets=()):
    assert (run.returncode, run.status) == (2, "FAILED!"), run.output
    message = run.result["msg"]
    assert "\n" not in message and "Traceback" not in run.output, run.output
    for fragment in fragments:
        assert fragment in message, message
    for secret in secrets:
        assert secret not in run.output


def load_demo_cluster(kube_api):
    items = yaml.safe_load((DEMO / "cluster.yaml").read_text())["items"]
    kube_api.set_objects(
        runtimeclasses=[item for item in items if item["kind"] == "RuntimeClass"],
        nodes=[item for item in items if item["kind"] == "Node"],
        pods=[item for item in items if item["kind"] == "Pod"],
        events=[item for item in items if item["kind"] == "Event"],
    )


def run_crosscheck(workdir, hosts, env_extra, extra_args=()):
    """crosscheck.yml over ``hosts`` with the K8S_AUTH_* (or other) variables of ``env_extra``.

    Writes the verdicts file and the reports into ``workdir/out``; ``PlaybookRun.written`` holds them.
    """
    out = workdir / "out"
    inventory = {"all": {"hosts": {"localhost": {"ansible_connection": "local"}}, "children": {"gpu_nodes": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                 "runtime_gate_dump_file": str(DEMO / "nodes" / "{{ inventory_hostname }}" / "config-dump.toml")},
        "hosts": {host: None for host in hosts}}}}}
    inventory_path = workdir / "hosts.yml"
    inventory_path.write_text(yaml.safe_dump(inventory))
    env = ansible_env(ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default", **env_extra)
    completed = subprocess.run(
        [str(VENV_BIN / "ansible-playbook"), "-i", str(inventory_path), str(REPO_ROOT / "playbooks" / "crosscheck.yml"),
         "-e", f"runtime_gate_verdicts_file={out / 'verdicts.json'}", "-e", f"runtime_gate_report_dir={out / 'report'}",
         *extra_args],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    verdicts_file = out / "verdicts.json"
    verdicts = json.loads(verdicts_file.read_text())["hosts"] if verdicts_file.exists() else {}
    written = {str(path.relative_to(out)): path.read_text(errors="replace")
               for path in sorted(out.rglob("*")) if path.is_file()} if out.exists() else {}
    return PlaybookRun(completed.returncode, completed.stdout + completed.stderr, verdicts, written)
