"""bin/rc-crosscheck: the seed lab's single-node contract, run as a user runs it (a subprocess)."""
import shutil
import subprocess
import sys

import pytest
from support.containerd_trees import dumped
from support.paths import REPO_ROOT
from support.tools import require_command

RC_CROSSCHECK = REPO_ROOT / "bin" / "rc-crosscheck"

RUNTIMECLASSES = """\
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: nvidia}
handler: nvidia
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: nvidia-cdi}
handler: nvidia-cdi
scheduling:
  nodeSelector: {nvidia.com/gpu.present: "true"}
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: nvidia-typo}
handler: nvdia
scheduling:
  nodeSelector: {gpufleet.example/pool: canary}
"""


WRONG_TYPE_DUMP = ('version = 2\nroot = "/var/lib/containerd"\nstate = "/run/containerd"\n'
                   '[plugins."io.containerd.grpc.v1.cri".containerd]\nruntimes = "x"\n')
# A node's root config.toml: valid TOML with a CRI table, but not what `config dump` prints.
ROOT_CONFIG = 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\ndefault_runtime_name = "runc"\n'


def run(*arguments, stdin=None, via_venv_python=False):
    command = [sys.executable, str(RC_CROSSCHECK)] if via_venv_python else [str(RC_CROSSCHECK)]
    return subprocess.run(command + [str(argument) for argument in arguments], input=stdin,
                          capture_output=True, text=True, check=False, cwd="/")


@pytest.fixture
def runtimeclasses(tmp_path):
    path = tmp_path / "runtimeclasses.yaml"
    path.write_text(RUNTIMECLASSES)
    return path


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    """``dump(release, scenario)`` → a file holding what the real containerd ``release`` prints for a scenario tree of
    tests/fixtures/containerd (support.containerd_trees), produced at test time."""
    directory = tmp_path_factory.mktemp("dumps")
    made = {}

    def make(release_name, scenario):
        if (release_name, scenario) not in made:
            printed = dumped(scenario, release_name, directory)
            assert printed.returncode == 0, printed.stderr
            made[(release_name, scenario)] = printed.path
        return made[(release_name, scenario)]
    return make


@pytest.mark.parametrize("via_venv_python", [False, True])
def test_partial_dump_prints_exactly_the_missing_handlers(runtimeclasses, via_venv_python, dump):
    # The real 2.2 loads runc + nvidia from S6; without --node-labels every class is required.
    completed = run("--runtimeclasses", runtimeclasses, dump("2.2", "S6"), via_venv_python=via_venv_python)
    assert (completed.returncode, completed.stdout, completed.stderr) == (1, "MISSING=nvdia\nMISSING=nvidia-cdi\n", "")


def test_complete_dump_is_ok(runtimeclasses, dump):
    completed = run("--runtimeclasses", runtimeclasses, "--node-labels", "nvidia.com/gpu.present=true,pool=main", dump("2.3", "S1"))
    assert (completed.returncode, completed.stdout, completed.stderr) == (0, "OK\n", "")


def test_node_labels_scope_the_classes(runtimeclasses, dump):
    completed = run("--runtimeclasses", runtimeclasses, "--node-labels", "gpufleet.example/pool=canary", dump("1.7", "S3full"))
    assert (completed.returncode, completed.stdout) == (1, "MISSING=nvdia\n")


def test_default_runtime_is_always_required(tmp_path, dump):
    only_nvidia = tmp_path / "nvidia.yaml"
    only_nvidia.write_text(RUNTIMECLASSES.split("---", maxsplit=1)[0])
    # S5 sets default_runtime_name = nvidia, which is loaded: OK. Judge a dump whose default is absent:
    broken = tmp_path / "dump.toml"
    broken.write_text(dump("2.2", "S5").read_text().replace("default_runtime_name = 'nvidia'", "default_runtime_name = 'kata'"))
    completed = run("--runtimeclasses", only_nvidia, broken)
    assert completed.returncode == 1
    # the CRI plugin cannot start without its default runtime, so nothing is served
    assert completed.stdout == "MISSING=kata\nMISSING=nvidia\n"


def test_runtimeclasses_from_stdin(runtimeclasses, dump):
    completed = run("--runtimeclasses", "-", "--node-labels", "nvidia.com/gpu.present=true", dump("2.2", "S1"), stdin=RUNTIMECLASSES)
    assert (completed.returncode, completed.stdout) == (0, "OK\n")


@pytest.mark.parametrize(
    "make_input,fragment",
    [
        (lambda tmp: tmp.joinpath("garbage.toml").write_bytes(b"this is [not toml") and tmp / "garbage.toml", "not valid TOML"),
        (lambda tmp: tmp.joinpath("latin1.toml").write_bytes(b"version = 2 # \xe9t\xe9\n") and tmp / "latin1.toml", "not UTF-8"),
        (lambda tmp: tmp.joinpath("empty.toml").write_bytes(b"") is not None and tmp / "empty.toml", "printed nothing"),
        (lambda tmp: tmp / "absent.toml", "does not exist"),
        (lambda tmp: tmp.joinpath("wrongtype.toml").write_text(WRONG_TYPE_DUMP) and tmp / "wrongtype.toml", "expected a table"),
        (lambda tmp: tmp.joinpath("config.toml").write_text(ROOT_CONFIG) and tmp / "config.toml",
         "has no top-level root, state, which every `containerd config dump` prints"),
    ],
    ids=["malformed", "non-utf8", "empty", "missing", "wrong-type", "root-config"],
)
def test_garbage_dump_exits_2_with_one_line_on_stderr(tmp_path, runtimeclasses, make_input, fragment):
    completed = run("--runtimeclasses", runtimeclasses, make_input(tmp_path))
    assert completed.returncode == 2
    assert completed.stdout == ""
    assert len(completed.stderr.strip().splitlines()) == 1, completed.stderr
    assert fragment in completed.stderr and "Traceback" not in completed.stderr


@pytest.mark.parametrize(
    "manifest,fragment",
    [("kind: [unclosed", "YAML"), ("apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: x}\n", "handler")],
)
def test_garbage_manifest_exits_2(tmp_path, manifest, fragment, dump):
    path = tmp_path / "rc.yaml"
    path.write_text(manifest)
    completed = run("--runtimeclasses", path, dump("2.2", "S1"))
    assert (completed.returncode, completed.stdout) == (2, "")
    assert fragment in completed.stderr and "Traceback" not in completed.stderr


def test_bad_node_labels_exit_2(runtimeclasses, dump):
    completed = run("--runtimeclasses", runtimeclasses, "--node-labels", "novalue", dump("2.2", "S1"))
    assert (completed.returncode, completed.stdout) == (2, "")
    assert "KEY=VALUE" in completed.stderr


def test_unreachable_cluster_exits_2(tmp_path, dump):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1', insecure-skip-tls-verify: true}}]\n"
        "users: [{name: u, user: {token: secret-token-value}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    completed = run("--kubeconfig", kubeconfig, dump("2.2", "S1"))
    assert (completed.returncode, completed.stdout) == (2, "")
    assert "127.0.0.1:1" in completed.stderr and "secret-token-value" not in completed.stderr


def _containerd():
    require_command("containerd", "containerd")


def test_without_dump_runs_the_real_containerd(tmp_path, runtimeclasses):
    _containerd()
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "config.toml").write_text(f'version = 2\nimports = ["{tmp_path}/conf.d/*.conf"]\n')
    # *.conf does not match the .toml drop-in: containerd silently loads only the built-in runc
    (tmp_path / "conf.d" / "99-nvidia.toml").write_text(
        'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n  runtime_type = "io.containerd.runc.v2"\n'
    )
    completed = run("--runtimeclasses", runtimeclasses, "--node-labels", "x=y", "--containerd-config", tmp_path / "config.toml")
    assert (completed.returncode, completed.stdout, completed.stderr) == (1, "MISSING=nvidia\n", "")


def test_containerd_failure_exits_2_with_its_stderr(tmp_path, runtimeclasses):
    _containerd()
    (tmp_path / "config.toml").write_text("version = 2\n[plugins\n")
    completed = run("--runtimeclasses", runtimeclasses, "--containerd-config", tmp_path / "config.toml")
    assert (completed.returncode, completed.stdout) == (2, "")
    assert "exited 1" in completed.stderr and "failed to load TOML" in completed.stderr


def test_missing_containerd_binary_exits_2(runtimeclasses):
    completed = run("--runtimeclasses", runtimeclasses, "--containerd-bin", "/nonexistent/containerd")
    assert (completed.returncode, completed.stdout) == (2, "")
    assert "'/nonexistent/containerd' was not found" in completed.stderr


@pytest.mark.parametrize("via_venv_python", [False, True])
def test_help_shows_the_description_not_the_sh_header(via_venv_python):
    completed = run("--help", via_venv_python=via_venv_python)
    text = " ".join(completed.stdout.split())  # argparse wraps the description to the terminal width
    assert completed.returncode == 0
    assert "rc-crosscheck — does this node's loaded containerd serve every RuntimeClass handler it must?" in text
    assert "venv_python" not in completed.stdout and ":'" not in completed.stdout


def test_explain_links_only_handlers_the_unloaded_dropin_defines():
    # gpu-node-02: 99-nvidia.toml (nvidia, nvidia-cdi) is never imported; the typo'd handler nvdia is in no file.
    node = REPO_ROOT / "inventory" / "demo" / "nodes" / "gpu-node-02"
    completed = run("--explain", "--runtimeclasses", REPO_ROOT / "inventory" / "demo" / "cluster.yaml", "--host-root", node,
                    node / "config-dump.toml")
    assert (completed.returncode, completed.stderr) == (1, "")
    lines = completed.stdout.splitlines()
    assert lines[:3] == ["MISSING=nvdia", "MISSING=nvidia", "MISSING=nvidia-cdi"]
    assert lines[3:6] == ["  nvdia: NOT_CONFIGURED_ANYWHERE", "  nvidia: DROPIN_NOT_IMPORTED, IMPORT_GLOB_MATCHES_NOTHING",
                          "  nvidia-cdi: DROPIN_NOT_IMPORTED, IMPORT_GLOB_MATCHES_NOTHING"]


def test_host_root_without_a_dump_needs_a_containerd_wrapper(tmp_path, runtimeclasses):
    # A bare containerd would read this machine's /etc/containerd, not the tree's: refused before it runs.
    (tmp_path / "etc" / "containerd").mkdir(parents=True)
    (tmp_path / "etc" / "containerd" / "config.toml").write_text("version = 2\n")
    completed = run("--runtimeclasses", runtimeclasses, "--host-root", tmp_path)
    assert (completed.returncode, completed.stdout) == (2, "")
    assert f"--host-root '{tmp_path}' needs --containerd-bin" in completed.stderr and "DUMP" in completed.stderr
    assert len(completed.stderr.splitlines()) == 1, completed.stderr


def test_a_relative_containerd_bin_is_resolved_from_where_rc_crosscheck_runs(tmp_path, runtimeclasses):
    # Issue 22 item 10: ./containerd was found, then failed to start (containerd runs with cwd /).
    _containerd()
    (tmp_path / "config.toml").write_text('version = 2\n')
    wrapper = tmp_path / "wrappers" / "node-containerd"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec {shutil.which("containerd")} "$@"\n')
    wrapper.chmod(0o755)
    completed = subprocess.run([str(RC_CROSSCHECK), "--runtimeclasses", str(runtimeclasses), "--node-labels", "x=y",
                                "--containerd-bin", "wrappers/node-containerd", "--containerd-config", str(tmp_path / "config.toml")],
                               capture_output=True, text=True, check=False, cwd=tmp_path)
    assert (completed.returncode, completed.stdout) == (1, "MISSING=nvidia\n"), completed.stderr


def test_a_handler_no_file_defines_is_configured_nowhere_even_on_a_broken_cri():
    # gpu-node-04: 99-nvidia.toml replaces the root's CRI table, runc and the default runtime go with it; the typo'd
    # handler nvdia is in no file, so fixing the CRI table would not serve it: it is configured nowhere.
    # The host root given relative to where rc-crosscheck runs, as any other path.
    demo = REPO_ROOT / "inventory" / "demo"
    completed = subprocess.run([str(RC_CROSSCHECK), "--explain", "--runtimeclasses", "cluster.yaml",
                                "--host-root", "nodes/gpu-node-04", "nodes/gpu-node-04/config-dump.toml"],
                               capture_output=True, text=True, check=False, cwd=demo)
    assert (completed.returncode, completed.stderr) == (1, "")
    lines = completed.stdout.splitlines()
    assert lines[:4] == ["MISSING=nvdia", "MISSING=nvidia", "MISSING=nvidia-cdi", "MISSING=runc"]
    assert lines[4:8] == ["  nvdia: NOT_CONFIGURED_ANYWHERE"] + [
        f"  {handler}: CRI_TABLE_REPLACED, DEFAULT_RUNTIME_UNDEFINED" for handler in ("nvidia", "nvidia-cdi", "runc")]
    missing_root = subprocess.run([str(RC_CROSSCHECK), "--runtimeclasses", "cluster.yaml", "--host-root", "nodes/nope",
                                   "nodes/gpu-node-04/config-dump.toml"], capture_output=True, text=True, check=False, cwd=demo)
    assert (missing_root.returncode, missing_root.stdout) == (2, "")
    assert missing_root.stderr == "rc-crosscheck: --host-root 'nodes/nope' is not an existing directory\n"


def test_explain_without_host_root_says_what_it_needs():
    dump = REPO_ROOT / "inventory" / "demo" / "nodes" / "gpu-node-03" / "config-dump.toml"
    completed = run("--explain", "--runtimeclasses", REPO_ROOT / "inventory" / "demo" / "cluster.yaml", dump)
    assert (completed.returncode, completed.stderr) == (1, "")
    lines = completed.stdout.splitlines()
    assert lines[:2] == ["MISSING=nvdia", "MISSING=nvidia-cdi"]
    assert lines[-1] == (f"  to explain them, give --host-root DIR: the node's filesystem (or a copy of its /etc/containerd "
                         f"and /etc/cdi) that {dump} was dumped from, so its config files can be read")
    # without --explain, the verdict lines alone, as ever
    assert run("--runtimeclasses", REPO_ROOT / "inventory" / "demo" / "cluster.yaml", dump).stdout == "MISSING=nvdia\nMISSING=nvidia-cdi\n"
