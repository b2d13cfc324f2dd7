"""Users' relative paths resolved against the directory ansible-playbook runs in (issue 14)."""
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._action.controller_paths import (
    controller_path,
    program_path,
    resolve_args,
    resolve_k8s_auth_paths,
    runs_on_controller,
)


def test_relative_paths_are_made_absolute_against_the_cwd():
    assert controller_path("inventory/demo/cluster.yaml", "/home/me/checkout") == "/home/me/checkout/inventory/demo/cluster.yaml"
    assert controller_path("../exports/./cluster.yaml", "/home/me/checkout") == "/home/me/exports/cluster.yaml"
    assert controller_path("/etc/cluster.yaml", "/home/me") == "/etc/cluster.yaml"
    assert controller_path("", "/home/me") == "" and controller_path(None, "/home/me") is None  # unset stays unset


def test_programs_stay_path_lookups_unless_given_as_paths():
    assert program_path("containerd", "/w") == "containerd"
    assert program_path("bin/containerd-at-etc", "/w") == "/w/bin/containerd-at-etc"


def test_only_the_named_arguments_change():
    args = {"dump_file": "dumps/n1.toml", "config_path": "/etc/containerd/config.toml", "containerd_bin": "containerd",
            "dropin_dirs": ["/etc/containerd/conf.d"], "host_root": "trees/n1"}
    resolved = resolve_args(args, path_args=("dump_file", "host_root"), program_args=("containerd_bin",), cwd="/w")
    assert resolved == {**args, "dump_file": "/w/dumps/n1.toml", "host_root": "/w/trees/n1"}
    assert args["dump_file"] == "dumps/n1.toml"  # the task's own arguments are not modified


def test_k8s_auth_paths_from_options_and_environment():
    environ = {"K8S_AUTH_KUBECONFIG": "kubeconfig", "K8S_AUTH_SSL_CA_CERT": "/etc/ca.pem", "K8S_AUTH_CERT_FILE": "certs/me.crt"}
    resolved = resolve_k8s_auth_paths({"src": None, "key_file": "certs/me.key"}, environ=environ, cwd="/w")
    # relative variables become options; absolute ones are left to the module's own fallback
    assert resolved == {"src": None, "kubeconfig": "/w/kubeconfig", "client_cert": "/w/certs/me.crt", "key_file": "/w/certs/me.key"}
    # an option the task gives wins over the variable, as in the module
    assert resolve_k8s_auth_paths({"kubeconfig": "/k"}, environ=environ, cwd="/w")["kubeconfig"] == "/k"


def test_only_the_local_connection_is_the_controller():
    class Connection:
        def __init__(self, transport):
            self.transport = transport

    assert runs_on_controller(Connection("local")) and not runs_on_controller(Connection("ssh"))
