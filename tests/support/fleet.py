"""A fleet of containerd config trees on one machine, with the inventory and cluster file that describe it.

Every host gets its own tree under a temp dir. Paths inside the trees are absolute
(``imports = ["<tmp>/node-x/conf.d/*.toml"]``), so the real ``containerd --config <tree>/config.toml config
dump`` resolves them without a bind mount. Each scenario states what containerd 1.6 prints for its tree
(``dumped_runtimes``); the expected verdict is derived here from that statement, the RuntimeClasses and the
node labels — never by calling the collection's core.

Each tree is also the node's filesystem for its runtime binaries: ``BinaryName`` points at a stand-in
executable inside the tree (``<tree>/usr/bin/nvidia-container-runtime``, a ``#!/bin/sh`` that exits 1), so
"is the runtime's binary there?" is answered by the tree, not by this machine. A scenario can leave a
stand-in out (``absent_binaries``): that runtime is then loaded but not served.
"""
from __future__ import annotations

import json
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from support.files import write_files

NODE_PYTHON = "/usr/bin/python3"
CONTROLLER_PYTHON = str(Path(__file__).resolve().parents[2] / ".venv" / "bin" / "python")
CRI_V1 = '"io.containerd.grpc.v1.cri"'
CRI_V2X = '"io.containerd.cri.v1.runtime"'
# BinaryName per runtime, relative to the tree (None: the shim's default runc from PATH).
RUNTIME_BINARIES = {
    "runc": None,
    "nvidia": "usr/bin/nvidia-container-runtime",
    "nvidia-cdi": "usr/bin/nvidia-container-runtime.cdi",
}
STAND_IN_SCRIPT = "#!/bin/sh\necho '{name}: fleet test stand-in, runs nothing' >&2\nexit 1\n"
ALL_RUNTIMES = ("runc", "nvidia", "nvidia-cdi")

GPU_LABELS = {"kubernetes.io/os": "linux", "nvidia.com/gpu.present": "true", "nvidia.com/cdi": "true"}
CPU_LABELS = {"kubernetes.io/os": "linux"}


@dataclass(frozen=True)
class RuntimeClass:
    name: str
    handler: str
    node_selector: dict | None = None


# Names differ from handlers on purpose: the verdict is about handlers. kata-qemu's selector matches no
# node, so it is required only where the node labels are unknown.
RUNTIME_CLASSES = (
    RuntimeClass("runc", "runc"),
    RuntimeClass("nvidia-gpu", "nvidia", {"nvidia.com/gpu.present": "true"}),
    RuntimeClass("nvidia-gpu-cdi", "nvidia-cdi", {"nvidia.com/gpu.present": "true", "nvidia.com/cdi": "true"}),
    RuntimeClass("kata", "kata-qemu", {"katacontainers.io/kata-runtime": "true"}),
)


def cri_block(runtimes, default_runtime="runc", plugin=CRI_V1):
    """TOML for a CRI plugin table declaring ``runtimes`` (in this order) and, unless None, the default runtime."""
    lines = []
    if default_runtime is not None:
        lines += [f"[plugins.{plugin}.containerd]", f'  default_runtime_name = "{default_runtime}"', ""]
    for name in runtimes:
        lines += [f'[plugins.{plugin}.containerd.runtimes."{name}"]', '  runtime_type = "io.containerd.runc.v2"']
        lines += [f'[plugins.{plugin}.containerd.runtimes."{name}".options]', "  SystemdCgroup = true"]
        if RUNTIME_BINARIES[name]:
            lines.append(f'  BinaryName = "{{tree}}/{RUNTIME_BINARIES[name]}"')
        lines.append("")
    return "\n".join(lines)


def root_config(*, version=2, imports=None, disabled_plugins=None, body=""):
    head = [f"version = {version}"] if version else []
    if imports:
        head.append("imports = [" + ", ".join(f'"{pattern}"' for pattern in imports) + "]")
    if disabled_plugins:
        head.append("disabled_plugins = [" + ", ".join(f'"{name}"' for name in disabled_plugins) + "]")
    return "\n".join(head) + "\n\n" + body


@dataclass(frozen=True)
class ConfigScenario:
    """One node's config tree and what containerd 1.6.20 makes of it.

    ``files`` maps tree-relative paths to TOML; ``{tree}`` is replaced by the tree's absolute path.
    ``dumped_runtimes`` and ``default_runtime`` are what the dump lists (None: it names no default);
    ``containerd_refuses``: ``config dump`` exits 1, so nothing is known (the verdict is UNKNOWN).
    ``absent_binaries``: runtimes whose ``BinaryName`` stand-in is not written into the tree.
    """

    name: str
    why: str
    files: dict
    dumped_runtimes: frozenset = frozenset()
    default_runtime: str | None = "runc"
    cri_disabled: bool = False
    containerd_refuses: bool = False
    absent_binaries: frozenset = frozenset()

    @property
    def loaded_runtimes(self) -> frozenset:
        """The runtimes that are served (the verdict's ``loaded_runtimes``)."""
        # The CRI plugin refuses to start when its default runtime is not configured
        # (ValidatePluginConfig, pkg/cri/config/config.go @v1.6.20): then no handler is served at all.
        if self.containerd_refuses or self.cri_disabled or self.default_runtime not in self.dumped_runtimes:
            return frozenset()
        # A loaded runtime whose binary is not on the node cannot start a pod: it is not served.
        return self.dumped_runtimes - self.absent_binaries


def _scenarios():
    conf_d_toml = ["{tree}/conf.d/*.toml"]
    scenarios = [
        ConfigScenario(
            "healthy", "root declares runc, nvidia and nvidia-cdi",
            {"config.toml": root_config(body=cri_block(ALL_RUNTIMES))}, frozenset(ALL_RUNTIMES)),
        ConfigScenario(
            "dropin-glob-match", "drop-in matched by *.toml repeats the whole CRI block",
            {"config.toml": root_config(imports=conf_d_toml, body=cri_block(["runc"])),
             "conf.d/99-nvidia.toml": root_config(body=cri_block(ALL_RUNTIMES))}, frozenset(ALL_RUNTIMES)),
        ConfigScenario(
            "dropin-glob-conf", "imports glob *.conf never matches 99-nvidia.toml: no error, no drop-in",
            {"config.toml": root_config(imports=["{tree}/conf.d/*.conf"], body=cri_block(["runc"])),
             "conf.d/99-nvidia.toml": root_config(body=cri_block(ALL_RUNTIMES))}, frozenset({"runc"})),
        ConfigScenario(
            "dropin-partial", "1.x: the drop-in's CRI table (runc + nvidia) replaces the root's whole table",
            {"config.toml": root_config(imports=conf_d_toml, body=cri_block(ALL_RUNTIMES)),
             "conf.d/99-nvidia.toml": root_config(body=cri_block(["runc", "nvidia"]))},
            frozenset({"runc", "nvidia"})),
        ConfigScenario(
            "dropin-nvidia-only", "1.x: a drop-in with only runtimes.nvidia drops runc; default runc → CRI fails",
            {"config.toml": root_config(imports=conf_d_toml, body=cri_block(ALL_RUNTIMES)),
             "conf.d/99-nvidia.toml": root_config(body=cri_block(["nvidia"], default_runtime=None))},
            frozenset({"nvidia"})),
        ConfigScenario(
            "root-version-3", "1.6.20 accepts version = 3 as 2 and ignores io.containerd.cri.v1.runtime",
            {"config.toml": root_config(version=3, body=cri_block(ALL_RUNTIMES, plugin=CRI_V2X))},
            frozenset({"runc"})),
        ConfigScenario(
            "root-unversioned", "a v1 (unversioned) file reads plugins.cri; URI-keyed tables are ignored",
            {"config.toml": root_config(version=0, body=cri_block(ALL_RUNTIMES))}, frozenset({"runc"})),
        ConfigScenario(
            "default-nvidia", "default_runtime_name = nvidia, all runtimes present",
            {"config.toml": root_config(body=cri_block(ALL_RUNTIMES, default_runtime="nvidia"))},
            frozenset(ALL_RUNTIMES), default_runtime="nvidia"),
        ConfigScenario(
            "default-nvidia-lost", "default nvidia but only runc declared → CRI fails",
            {"config.toml": root_config(body=cri_block(["runc"], default_runtime="nvidia"))},
            frozenset({"runc"}), default_runtime="nvidia"),
        ConfigScenario(
            "cri-disabled", "disabled_plugins lists the CRI plugin: the dump omits its table, nothing is served",
            {"config.toml": root_config(disabled_plugins=["io.containerd.grpc.v1.cri"], body=cri_block(ALL_RUNTIMES))},
            frozenset(), default_runtime=None, cri_disabled=True),
        ConfigScenario(
            "binary-missing", "all runtimes loaded, but nvidia's BinaryName does not exist on the node",
            {"config.toml": root_config(body=cri_block(ALL_RUNTIMES))}, frozenset(ALL_RUNTIMES),
            absent_binaries=frozenset({"nvidia"})),
        ConfigScenario(
            "runc-only", "plain runc node",
            {"config.toml": root_config(body=cri_block(["runc"]))}, frozenset({"runc"})),
        ConfigScenario(
            "config-absent", "the config file does not exist: containerd exits 1", {},
            default_runtime=None, containerd_refuses=True),
        ConfigScenario(
            "config-malformed", "unterminated array: containerd exits 1 (failed to load TOML)",
            {"config.toml": 'version = 2\nimports = ["{tree}/conf.d/*.toml"\n'},
            default_runtime=None, containerd_refuses=True),
    ]
    return {scenario.name: scenario for scenario in scenarios}


SCENARIOS = _scenarios()


@dataclass(frozen=True)
class FleetHost:
    """An inventory host: its config scenario, how the cluster knows it, how Ansible reaches it."""

    name: str
    scenario: str
    labels: dict | None = field(default_factory=lambda: dict(GPU_LABELS))  # None: no Node in the cluster
    node_name: str | None = None  # set → runtime_gate_node_name, and the cluster Node is named so
    inventory_labels: dict | None = None  # set → runtime_gate_node_labels in the inventory
    use_dump_file: bool = False  # judge a dump taken beforehand; the containerd binary must not run
    connection_vars: dict | None = None  # None: local connection
    unreachable: bool = False
    inventory_vars: dict | None = None  # any further host variables, written last

    @property
    def config(self) -> ConfigScenario:
        return SCENARIOS[self.scenario]

    @property
    def effective_labels(self) -> dict | None:
        return self.inventory_labels if self.inventory_labels is not None else self.labels


@dataclass
class Fleet:
    base_dir: Path
    hosts: list
    inventory_path: Path
    cluster_path: Path
    verdicts_path: Path

    def tree(self, host_name: str) -> Path:
        return self.base_dir / "nodes" / host_name

    def config_path(self, host_name: str) -> Path:
        return self.tree(host_name) / "config.toml"

    def host(self, host_name: str) -> FleetHost:
        return next(host for host in self.hosts if host.name == host_name)


def containerd_config_dump(config_path, containerd_bin="containerd"):
    """The real ``containerd config dump`` of a config file (stdout); raises on a non-zero exit."""
    completed = subprocess.run([containerd_bin, "--config", str(config_path), "config", "dump"],
                               capture_output=True, text=True, check=False, timeout=30)
    if completed.returncode != 0:
        raise RuntimeError(f"containerd config dump of {config_path} exited {completed.returncode}: "
                           f"{completed.stderr.strip()}")
    return completed.stdout


def runtime_binary(tree: Path, runtime: str) -> str | None:
    """The ``BinaryName`` the scenarios give ``runtime`` in ``tree`` (None: unset)."""
    return str(tree / RUNTIME_BINARIES[runtime]) if RUNTIME_BINARIES.get(runtime) else None


def write_tree(tree: Path, scenario: ConfigScenario):
    write_files(tree, scenario.files)
    (tree / "conf.d").mkdir(exist_ok=True)
    for runtime, relative_path in RUNTIME_BINARIES.items():
        if relative_path and runtime not in scenario.absent_binaries:
            stand_in = tree / relative_path
            stand_in.parent.mkdir(parents=True, exist_ok=True)
            stand_in.write_text(STAND_IN_SCRIPT.format(name=stand_in.name), encoding="utf-8")
            stand_in.chmod(stand_in.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _host_vars(fleet: Fleet, host: FleetHost) -> dict:
    host_vars = dict(host.connection_vars) if host.connection_vars else {
        "ansible_connection": "local", "ansible_python_interpreter": NODE_PYTHON}
    host_vars["runtime_gate_containerd_config"] = str(fleet.config_path(host.name))
    if host.node_name:
        host_vars["runtime_gate_node_name"] = host.node_name
    if host.inventory_labels is not None:
        host_vars["runtime_gate_node_labels"] = dict(host.inventory_labels)
    if host.use_dump_file:
        dump_path = fleet.tree(host.name) / "config-dump.toml"
        dump_path.write_text(containerd_config_dump(fleet.config_path(host.name)), encoding="utf-8")
        host_vars["runtime_gate_dump_file"] = str(dump_path)
        host_vars["runtime_gate_containerd_bin"] = str(fleet.base_dir / "no-such-containerd")
    host_vars.update(host.inventory_vars or {})
    return host_vars


def cluster_objects(hosts) -> list:
    """RuntimeClasses and Nodes as ``kubectl get runtimeclass,node -o yaml`` prints them."""
    objects = []
    for runtime_class in RUNTIME_CLASSES:
        item = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                "metadata": {"name": runtime_class.name}, "handler": runtime_class.handler}
        if runtime_class.node_selector:
            item["scheduling"] = {"nodeSelector": dict(runtime_class.node_selector)}
        objects.append(item)
    for host in hosts:
        if host.labels is not None:
            objects.append({"apiVersion": "v1", "kind": "Node",
                            "metadata": {"name": host.node_name or host.name, "labels": dict(host.labels)}})
    # A Node no inventory host refers to: must not disturb anything.
    objects.append({"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": "control-plane-0", "labels": {"node-role.kubernetes.io/control-plane": ""}}})
    return objects


def write_cluster_file(path: Path, hosts, cluster_format="list"):
    objects = cluster_objects(hosts)
    if cluster_format == "list":
        text = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects,
                               "metadata": {"resourceVersion": ""}}, sort_keys=False)
    else:
        text = yaml.safe_dump_all(objects, sort_keys=False, explicit_start=True)
    path.write_text(text, encoding="utf-8")


def build_fleet(base_dir: Path, hosts, *, cluster_format="list", controller_python=CONTROLLER_PYTHON) -> Fleet:
    """Write every host's tree, the inventory (group gpu_nodes + localhost) and the cluster file."""
    base_dir = Path(base_dir)
    base_dir.mkdir(parents=True, exist_ok=True)
    fleet = Fleet(base_dir, list(hosts), base_dir / "inventory.yml", base_dir / "cluster.yaml",
                  base_dir / "verdicts.json")
    node_hosts = {}
    for host in fleet.hosts:
        write_tree(fleet.tree(host.name), host.config)
        node_hosts[host.name] = _host_vars(fleet, host)
    inventory = {"all": {
        "hosts": {"localhost": {"ansible_connection": "local", "ansible_python_interpreter": controller_python}},
        "children": {"gpu_nodes": {"hosts": node_hosts}}}}
    fleet.inventory_path.write_text(yaml.safe_dump(inventory, sort_keys=False), encoding="utf-8")
    write_cluster_file(fleet.cluster_path, fleet.hosts, cluster_format)
    return fleet


def required_by_runtime_classes(labels: dict | None) -> set:
    return {runtime_class.handler for runtime_class in RUNTIME_CLASSES
            if labels is None
            or all(labels.get(key) == value for key, value in (runtime_class.node_selector or {}).items())}


def expected_verdict(host: FleetHost) -> dict:
    """What the verdicts file must hold for ``host`` (without ``reason``, lists sorted).

    For UNKNOWN only what the contract fixes: nothing loaded, no default runtime.
    """
    scenario = host.config
    if host.unreachable or scenario.containerd_refuses:
        return {"status": "UNKNOWN", "loaded_runtimes": [], "default_runtime": None}
    required = required_by_runtime_classes(host.effective_labels)
    # pods without runtimeClassName need the default handler; a dump naming none means containerd's built-in runc
    required.add(scenario.default_runtime or "runc")
    missing = required - scenario.loaded_runtimes
    return {"status": "MISSING" if missing else "OK", "missing_handlers": sorted(missing),
            "required_handlers": sorted(required), "loaded_runtimes": sorted(scenario.loaded_runtimes),
            "default_runtime": scenario.default_runtime}


def expected_verdicts(hosts) -> dict:
    return {host.name: expected_verdict(host) for host in hosts}


CONTRACT_FIELDS = ("status", "missing_handlers", "required_handlers", "loaded_runtimes", "default_runtime")
UNKNOWN_FIELDS = ("status", "loaded_runtimes", "default_runtime")


def comparable_verdicts(verdicts_document: dict) -> dict:
    """The verdicts file's hosts reduced to the fields ``expected_verdict`` fixes, lists sorted."""
    comparable = {}
    for host_name, entry in verdicts_document["hosts"].items():
        fields = UNKNOWN_FIELDS if entry.get("status") == "UNKNOWN" else CONTRACT_FIELDS
        comparable[host_name] = {key: sorted(entry[key]) if isinstance(entry.get(key), list) else entry.get(key)
                                 for key in fields}
    return comparable


def read_verdicts(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))
