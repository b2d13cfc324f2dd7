"""A seeded generator of containerd node config trees, for differential tests against real daemons.

Each tree is what a node could carry at /etc/containerd: a root ``config.toml`` and 0-2 drop-ins, written with the
variations that decide what containerd loads — root and drop-in config versions (none, 2, 3, 4), the plugin key the
runtimes sit under (``io.containerd.grpc.v1.cri`` or ``io.containerd.cri.v1.runtime``), the ``imports`` form (absolute,
relative, literal, ``*``, ``?``, ``[…]``, ``**``, a pattern matching nothing, none), default-runtime variants (absent,
runc, another runtime, empty, a name no runtime has, the deprecated 1.x ``default_runtime`` table), ``disabled_plugins``
(CRI, the images plugin, the snapshotter, a harmless one), the CRI snapshotter (overlayfs, native, one that does not
exist), ``runtime_type`` (runc, kata, empty) and options. The same seed gives the same tree on every machine.

The start-up keys (docs/cri-startup.md: ``required_plugins``, ``root``/``state``, ``timeouts``, a runtime's
``base_runtime_spec`` and its file) come from a second random stream of the same seed (``_start_up``), so adding them
left every earlier tree as it was. A third stream (``_runtime_keys``) writes the other keys of a runtime table and of
runc's options that some release's ``containerd config default`` prints (``tools/differential`` lists them from the
binaries and names any no tree set), with values that keep a runtime usable, so the daemons decide whether a key the
judgement does not read changes what is served.

Nothing here predicts what containerd does with a tree: the real daemon is the oracle (support.containerd_daemons).
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

CRI_V2 = "io.containerd.grpc.v1.cri"
CRI_RUNTIME_V3 = "io.containerd.cri.v1.runtime"
CRI_IMAGES_V3 = "io.containerd.cri.v1.images"
HANDLERS = ("nvidia", "nvidia-cdi", "kata", "gvisor")
# Every handler a tree can make a daemon serve: the judged RuntimeClasses require each of them.
ALL_HANDLERS = ("runc",) + HANDLERS + ("default",)

IMPORT_FORMS = ("none", "absolute-star", "relative-star", "absolute-literal", "relative-literal", "question", "class",
                "double-star", "matches-nothing")


@dataclass
class ConfigFile:
    path: str                     # relative to etc/containerd
    version: int | None
    imports: list = field(default_factory=list)
    disabled_plugins: list | None = None
    tables: dict = field(default_factory=dict)   # dotted header -> {key: value}
    top: dict = field(default_factory=dict)      # other top-level keys (required_plugins, root, state)

    def text(self) -> str:
        lines = []
        if self.version is not None:
            lines.append(f"version = {self.version}")
        if self.imports:
            lines.append(f"imports = {json.dumps(self.imports)}")
        if self.disabled_plugins is not None:
            lines.append(f"disabled_plugins = {json.dumps(self.disabled_plugins)}")
        lines.extend(f"{key} = {json.dumps(value)}" for key, value in self.top.items())
        for header, values in self.tables.items():
            lines.append("")
            lines.append(f"[{header}]")
            lines.extend(f"  {key} = {json.dumps(value)}" for key, value in values.items())
        return "\n".join(lines) + "\n"


@dataclass
class Tree:
    seed: int
    files: list
    description: list             # what was generated, in words (printed with a disagreement)
    other_files: dict = field(default_factory=dict)   # path relative to etc/containerd -> text (a base spec)

    def write(self, node_root: Path) -> Path:
        etc = node_root / "etc" / "containerd"
        for config_file in self.files:
            path = etc / config_file.path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(config_file.text(), encoding="utf-8")
        for name, text in self.other_files.items():
            (etc / name).parent.mkdir(parents=True, exist_ok=True)
            (etc / name).write_text(text, encoding="utf-8")
        return node_root

    def show(self) -> str:
        parts = [f"tree seed {self.seed}: {'; '.join(self.description)}"]
        for config_file in self.files:
            parts.append(f"--- /etc/containerd/{config_file.path}\n{config_file.text()}")
        for name, text in self.other_files.items():
            parts.append(f"--- /etc/containerd/{name}\n{text}")
        return "\n".join(parts)


def _key(plugin):
    return f'plugins."{plugin}"'


def _runtime_tables(rng, plugin, name, description):
    prefix = f"{_key(plugin)}.containerd.runtimes.{name}"
    runtime_type = rng.choices(["io.containerd.runc.v2", "io.containerd.kata.v2", ""], weights=[8, 1, 1])[0]
    if name == "kata":
        runtime_type = rng.choice(["io.containerd.kata.v2", runtime_type])
    tables = {prefix: {"runtime_type": runtime_type}}
    if runtime_type == "":
        description.append(f"{name}: runtime_type empty")
    options = {}
    if rng.random() < 0.4:
        options["SystemdCgroup"] = rng.choice([True, False])
    if name.startswith("nvidia") and rng.random() < 0.5:
        options["BinaryName"] = "/usr/bin/runc"
    if options:
        tables[prefix + ".options"] = options
    return tables


def generate(seed: int) -> Tree:
    rng = random.Random(seed)
    description = []
    root_version = rng.choice([None, 2, 2, 2, 3, 3, 4])
    native_key = CRI_RUNTIME_V3 if (root_version or 0) >= 3 else CRI_V2

    def plugin_key(version):
        native = CRI_RUNTIME_V3 if (version or 0) >= 3 else CRI_V2
        if rng.random() < 0.15:
            other = CRI_V2 if native == CRI_RUNTIME_V3 else CRI_RUNTIME_V3
            description.append(f"runtimes under {other} in a version {version} file")
            return other
        return native

    root = ConfigFile("config.toml", root_version)
    description.append(f"root version {root_version}")
    handlers = rng.sample(HANDLERS, rng.randint(1, 3))
    dropin_count = rng.choice([0, 1, 1, 2])
    dropins = []
    for index in range(dropin_count):
        suffix = rng.choices([".toml", ".conf"], weights=[9, 1])[0]
        version = rng.choices([root_version, None, 2, 3, 4], weights=[6, 1, 1, 1, 1])[0]
        dropins.append(ConfigFile(f"conf.d/{10 + index * 89:02d}-{['a', 'nvidia'][index]}{suffix}", version))
        description.append(f"drop-in conf.d/{dropins[-1].path.split('/')[-1]} version {version}")

    # Runtimes: runc mostly in the root, the others spread over the files.
    owners = [root] + dropins
    if rng.random() < 0.85:
        root.tables.update(_runtime_tables(rng, plugin_key(root.version), "runc", description))
    else:
        description.append("no runc runtime written")
    for name in handlers:
        owner = rng.choice(owners)
        owner.tables.update(_runtime_tables(rng, plugin_key(owner.version), name, description))

    default_choice = rng.choices(["absent", "runc", "handler", "empty", "nosuch", "deprecated-table"],
                                 weights=[8, 3, 1, 1, 1, 1])[0]
    containerd_table = f"{_key(native_key)}.containerd"
    if default_choice != "absent":
        description.append(f"default runtime: {default_choice}")
    if default_choice == "runc":
        root.tables.setdefault(containerd_table, {})["default_runtime_name"] = "runc"
    elif default_choice == "handler":
        rng.choice(owners).tables.setdefault(containerd_table, {})["default_runtime_name"] = rng.choice(handlers)
    elif default_choice == "empty":
        root.tables.setdefault(containerd_table, {})["default_runtime_name"] = ""
    elif default_choice == "nosuch":
        root.tables.setdefault(containerd_table, {})["default_runtime_name"] = "nosuch"
    elif default_choice == "deprecated-table":
        root.tables[f"{_key(CRI_V2)}.containerd.default_runtime"] = {"runtime_type": "io.containerd.runc.v2"}

    disabled = rng.choices([None, [CRI_V2], ["cri"], ["io.containerd.snapshotter.v1.overlayfs"], [CRI_IMAGES_V3],
                            ["io.containerd.snapshotter.v1.zfs"], []], weights=[14, 1, 1, 1, 1, 1, 1])[0]
    if disabled is not None:
        rng.choice(owners).disabled_plugins = disabled
        description.append(f"disabled_plugins {disabled}")

    snapshotter = rng.choices([None, "native", "nosuch"], weights=[12, 1, 1])[0]
    if snapshotter:
        table = f"{_key(CRI_IMAGES_V3)}" if (root_version or 0) >= 3 else containerd_table
        root.tables.setdefault(table, {})["snapshotter"] = snapshotter
        description.append(f"snapshotter {snapshotter}")

    form = rng.choice(IMPORT_FORMS) if dropins else rng.choice(["none", "absolute-star", "matches-nothing"])
    description.append(f"imports {form}")
    names = [dropin.path for dropin in dropins]
    root.imports = {
        "none": [],
        "absolute-star": ["/etc/containerd/conf.d/*.toml"],
        "relative-star": ["conf.d/*.toml"],
        "absolute-literal": [f"/etc/containerd/{name}" for name in names],
        "relative-literal": names,
        "question": ["/etc/containerd/conf.d/??-*.toml"],
        "class": ["/etc/containerd/conf.d/[0-9]*"],
        "double-star": ["/etc/containerd/conf.d/**.toml"],
        "matches-nothing": ["/etc/containerd/conf.d/*.cfg"],
    }[form]
    tree = Tree(seed, [root] + dropins, description)
    _start_up(tree, seed)
    _runtime_keys(tree, seed)
    return tree


BASE_SPEC = "/etc/containerd/specs/base.json"


def _start_up(tree, seed):
    """The keys containerd checks when it starts (docs/cri-startup.md), from the seed's own second stream."""
    rng = random.Random(f"start-up {seed}")
    root = tree.files[0]
    required = rng.choices([None, ["io.containerd.snapshotter.v1.overlayfs"], ["io.containerd.snapshotter.v1.zfs"],
                            ["io.containerd.nosuch.v1.thing"], ["io.containerd.grpc.v1.cri"], ["overlayfs"]],
                           weights=[30, 2, 1, 1, 2, 1])[0]
    if required is not None:
        root.top["required_plugins"] = required
        tree.description.append(f"required_plugins {required}")
    if rng.random() < 0.03:
        root.top["root"] = root.top["state"] = "/var/lib/containerd"
        tree.description.append("root = state")
    if rng.random() < 0.03:
        root.tables["timeouts"] = {'"io.containerd.timeout.shim.cleanup"': rng.choice(["5s", "soon"])}
        tree.description.append(f"timeouts {root.tables['timeouts']}")
    spec = rng.choices([None, "present", "missing", "not-json"], weights=[24, 2, 1, 1])[0]
    runc = next((header for header in root.tables if header.endswith(".containerd.runtimes.runc")), None)
    if spec and runc:
        root.tables[runc]["base_runtime_spec"] = BASE_SPEC
        tree.description.append(f"runc base_runtime_spec {spec}")
        if spec != "missing":
            tree.other_files[BASE_SPEC.removeprefix("/etc/containerd/")] = (
                '{"ociVersion": "1.1.0"}\n' if spec == "present" else "version = 2\n")


# The other keys of a runtime table in some release's `containerd config default` (1.6-2.4), each with values a usable
# runtime can carry: the default, or a harmless other value (annotations passed through, a device policy that a pod
# sandbox does not use). Keys a release does not know are ignored by it; the daemon is the oracle either way.
RUNTIME_TABLE_KEYS = {
    "cni_conf_dir": [""],
    "cni_max_conf_num": [0, 1],
    "container_annotations": [[], ["nvidia.cdi.k8s.io/*"]],
    "pod_annotations": [[], ["io.kubernetes.cri.*"]],
    "privileged_without_host_devices": [False, True],
    "privileged_without_host_devices_all_devices_allowed": [False, True],
    "runtime_engine": [""],            # 1.x, deprecated
    "runtime_root": [""],              # 1.x, deprecated
    "runtime_path": [""],
    "sandbox_mode": ["podsandbox"],    # 1.7
    "sandboxer": ["podsandbox"],       # 2.x
    "snapshotter": [""],
    "io_type": [""],                   # 2.x
    "cgroup_writable": [False, True],  # 2.1+
    "disable_pause_image_pull": [False],   # 2.4
}
# runc's options (runc's own type; written only for runc-typed runtimes).
RUNC_OPTION_KEYS = {
    "CriuImagePath": [""],
    "CriuPath": [""],
    "CriuWorkPath": [""],
    "IoGid": [0],
    "IoUid": [0],
    "NoNewKeyring": [False, True],
    "NoPivotRoot": [False],
    "Root": [""],
    "ShimCgroup": [""],
}


def _runtime_keys(tree, seed):
    """The remaining keys of runtime tables and runc options, from the seed's own third stream."""
    rng = random.Random(f"runtime keys {seed}")
    for config_file in tree.files:
        for header in [header for header in config_file.tables if ".containerd.runtimes." in header
                       and not header.endswith(".options")]:
            if rng.random() < 0.5:
                keys = rng.sample(sorted(RUNTIME_TABLE_KEYS), rng.randint(1, 5))
                config_file.tables[header].update({key: rng.choice(RUNTIME_TABLE_KEYS[key]) for key in keys})
                tree.description.append(f"{header.rsplit('.', 1)[-1]}: {', '.join(keys)}")
            if config_file.tables[header].get("runtime_type") == "io.containerd.runc.v2" and rng.random() < 0.4:
                keys = rng.sample(sorted(RUNC_OPTION_KEYS), rng.randint(1, 4))
                options = config_file.tables.setdefault(header + ".options", {})
                options.update({key: rng.choice(RUNC_OPTION_KEYS[key]) for key in keys})
                tree.description.append(f"{header.rsplit('.', 1)[-1]} options: {', '.join(keys)}")
