# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The containerd_runtimes role's runtime inputs in one shape: its own entries, kubespray's
``containerd_additional_runtimes`` entries, and the NVIDIA preset. Controller side, pure.
"""

import posixpath

# The runtimes `nvidia-ctk runtime configure` (and the GPU operator's toolkit) write: NVIDIA/nvidia-container-toolkit
# cmd/nvidia-ctk-installer/container/runtime/containerd/containerd_test.go (TestSetupCleanup: nvidia, nvidia-cdi,
# nvidia-legacy with BinaryName nvidia-container-runtime, .cdi, .legacy); pkg/config/engine/containerd/config.go
# AddRuntime starts each from a copy of runc's table (so runc's SystemdCgroup carries over), then sets BinaryName, on
# every config version: _change/inherit does the same.
NVIDIA_PRESET = (("nvidia", "nvidia-container-runtime"), ("nvidia-cdi", "nvidia-container-runtime.cdi"),
                 ("nvidia-legacy", "nvidia-container-runtime.legacy"))
INHERITED_RUNTIME = "runc"
# kubespray's keys beside runtime_type (roles/container-engine/containerd/templates/config.toml.j2 writes them as given).
EXTRA_RUNTIME_KEYS = ("runtime_engine", "runtime_root", "base_runtime_spec")


def _kubespray_option(value):
    """kubespray's template writes "true"/"false" bare (booleans) and every other value quoted."""
    return {"true": True, "false": False}.get(value, value) if isinstance(value, str) else value


def expand_runtimes(runtimes, *, presets=(), nvidia_binary_dir="/usr/bin", config_path="/etc/containerd/config.toml"):
    """``[{name, runtime_type, binary_name, options, runtime_engine, runtime_root, base_runtime_spec, inherit}]``.

    Preset runtimes come first and an entry of ``runtimes`` with the same name is merged over its preset entry.
    A relative ``base_runtime_spec`` is taken from the root config's directory, as kubespray's ``containerd_cfg_dir``.
    """
    expanded = {}
    if "nvidia" in presets:
        for name, binary in NVIDIA_PRESET:
            expanded[name] = {"name": name, "binary_name": posixpath.join(nvidia_binary_dir, binary), "options": {},
                              "inherit": INHERITED_RUNTIME}
    ordered = list(expanded)
    for runtime in runtimes:
        entry = dict(expanded.get(runtime.get("name"), {}))
        for key, value in runtime.items():
            if key == "options":
                entry["options"] = {**entry.get("options", {}),
                                    **{option: _kubespray_option(item) for option, item in (value or {}).items()}}
            elif value not in (None, ""):
                entry[key] = value
        spec = entry.get("base_runtime_spec")
        if spec and not spec.startswith("/"):
            entry["base_runtime_spec"] = posixpath.join(posixpath.dirname(config_path), spec)
        entry.setdefault("options", {})
        if runtime.get("name") not in expanded:
            ordered.append(runtime.get("name"))
        expanded[runtime.get("name")] = entry
    return [expanded[name] for name in ordered]
