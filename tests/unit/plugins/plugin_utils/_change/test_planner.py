"""The planner's first step, before the node is read: the options made ready (paths cleaned as Go's Glob returns
them, the import pattern and backup directory decided) or refused with a message naming the option."""
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._specs.containerd_runtime_config import (
    get_containerd_runtime_config_argument_spec,
)
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.planner import change_request, probe_options


def options(**given):
    """The action's options as validate_argument_spec returns them: every default, then ``given``."""
    spec = get_containerd_runtime_config_argument_spec()["argument_spec"]
    return {**{name: option.get("default") for name, option in spec.items()}, **given}


def test_paths_are_cleaned_and_the_defaults_decided_before_the_node_is_read():
    request, refusal = change_request(options(runtimes=[{"name": "nvidia", "binary_name": "/usr/bin/nvidia-container-runtime"}],
                                              config_path="/etc/containerd//config.toml", dropin_dir="/etc/containerd/conf.d/"))
    assert refusal is None
    assert (request["config_path"], request["dropin_dir"]) == ("/etc/containerd/config.toml", "/etc/containerd/conf.d")
    assert request["import_pattern"] == "/etc/containerd/conf.d/*.toml"
    assert request["backup_dir"] == "/etc/containerd/.runtime-gate-backups"
    probe = probe_options(request)
    assert probe["patterns"] == ["/etc/containerd/conf.d/*.toml"] and probe["list_dirs"] == ["/etc/containerd/.runtime-gate-backups"]
    assert "/usr/bin/nvidia-container-runtime" in probe["binaries"] and "containerd-shim-runc-v2" in probe["binaries"]


def test_a_refusal_names_the_option_not_a_role_variable():
    assert change_request(options()) == (
        None, "option runtimes is empty and option presets chooses none: there is nothing to give the node")
    _request, refusal = change_request(options(presets=["nvidia"], dropin_dir="/etc/containerd/../cron.d"))
    assert refusal.startswith("option dropin_dir '/etc/cron.d' is outside /etc/containerd"), refusal
    assert "containerd_runtimes_" not in refusal
