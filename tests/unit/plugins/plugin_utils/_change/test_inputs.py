"""kubespray's containerd_additional_runtimes entries and the NVIDIA preset in the role's one runtime shape."""
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.inputs import expand_runtimes
from ansible_collections.gpufleet.runtime_gate.plugins.plugin_utils._change.render import runtime_table


def test_a_kubespray_entry_as_its_docs_show_it():
    # kubespray docs/containerd.md, containerd_runc_runtime / containerd_additional_runtimes (after the spec's aliases
    # turned type/engine/root into runtime_type/runtime_engine/runtime_root).
    entry = {"name": "nvidia", "runtime_type": "io.containerd.runc.v2", "runtime_engine": "", "runtime_root": "",
             "options": {"systemdCgroup": "false", "BinaryName": "/usr/local/bin/my-runc"},
             "base_runtime_spec": "cri-base.json"}
    [runtime] = expand_runtimes([entry], config_path="/etc/containerd/config.toml")
    assert runtime_table(runtime) == {"runtime_type": "io.containerd.runc.v2",
                                      "base_runtime_spec": "/etc/containerd/cri-base.json",
                                      "options": {"systemdCgroup": False, "BinaryName": "/usr/local/bin/my-runc"}}


def test_the_nvidia_preset_names_binaries_and_inherits_runc():
    runtimes = expand_runtimes([], presets=["nvidia"], nvidia_binary_dir="/usr/local/nvidia/toolkit")
    assert [(r["name"], r["binary_name"], r["inherit"]) for r in runtimes] == [
        ("nvidia", "/usr/local/nvidia/toolkit/nvidia-container-runtime", "runc"),
        ("nvidia-cdi", "/usr/local/nvidia/toolkit/nvidia-container-runtime.cdi", "runc"),
        ("nvidia-legacy", "/usr/local/nvidia/toolkit/nvidia-container-runtime.legacy", "runc"),
    ]


def test_an_entry_is_merged_over_its_preset_entry():
    runtimes = expand_runtimes([{"name": "nvidia", "options": {"SystemdCgroup": True}}, {"name": "kata", "options": {}}],
                               presets=["nvidia"])
    assert [r["name"] for r in runtimes] == ["nvidia", "nvidia-cdi", "nvidia-legacy", "kata"]
    assert runtimes[0]["binary_name"] == "/usr/bin/nvidia-container-runtime"
    assert runtimes[0]["options"] == {"SystemdCgroup": True}
