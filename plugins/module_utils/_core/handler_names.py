# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Runtime handler names in common use. Shared by the explanation (no spelling advice for them) and the RuntimeClass
planner that runtimeclass_apply runs as a module, so it lives apart from the controller's explanation rules."""

# Runtime handler names in common use (containerd shims, GPU Operator, Kata, gVisor, Wasm shims): a handler
# spelt like one of them is a deliberate choice, maybe one that no judged node serves *yet* (a staged rollout),
# never a typo of a neighbour such as `nvidia` for `nvidia-cdi`.
WELL_KNOWN_HANDLERS = frozenset((
    "runc", "crun", "youki", "runsc", "gvisor", "nvidia", "nvidia-cdi", "nvidia-legacy", "nvidia-experimental",
    "wasmtime", "wasmedge", "wasmer", "spin", "slight", "lunatic", "wws",
))
WELL_KNOWN_PREFIXES = ("kata",)  # kata, kata-qemu, kata-clh, kata-fc, kata-qemu-nvidia-gpu, ...


def is_well_known_handler(name):
    """True for a runtime handler name in common use (``runc``, ``nvidia-cdi``, ``kata-qemu``, ``runsc``, ...)."""
    name = str(name).lower()
    return name in WELL_KNOWN_HANDLERS or name.startswith(WELL_KNOWN_PREFIXES)
