# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The node options of containerd_facts and node_crosscheck: what the containerd_facts node module takes."""


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  containerd_bin:
    description:
      - The containerd binary to run, a name looked up in E(PATH) or an absolute path. Unset (null or empty) means C(containerd).
      - Required when O(host_root) is not C(/) and O(dump_file) is not given, as a wrapper that runs containerd on the node's
        root (C(chroot), C(nsenter), C(inventory/demo/bin/containerd-at-etc)), because a bare containerd reads this
        machine's C(/etc/containerd) (and silently dumps built-in defaults when it is absent) and would judge the wrong node.
        Without it the module fails and says so.
      - A compiled program (an ELF file, such as containerd itself) is refused there, since it cannot run containerd on
        another root; the wrapper is a script.
    type: str
  config_path:
    description:
      - The root configuration file passed as C(--config); its raw text is collected too.
      - A node path; its text is read under O(host_root).
    type: path
    default: /etc/containerd/config.toml
  host_root:
    description:
      - The directory where the node's filesystem is visible to the module, as the node's C(/). C(/) on the node itself;
        C(/host) when the module runs in a container with the host's root mounted there; or a copied node tree.
      - The config files (O(config_path) and every file its C(imports) reach), the expansion of C(imports) globs, the listings of
        O(dropin_dirs) and O(cdi_spec_dirs), and the stat of each runtime binary are all looked up under it. Paths stay node
        paths (globs are evaluated under it, their matches reported as node paths); symbolic links are followed inside it.
      - An absolute C(BinaryName) is looked for under it; a bare name (C(runc), a shim) in the node's standard E(PATH)
        directories (C(/usr/local/sbin), C(/usr/local/bin), C(/usr/sbin), C(/usr/bin), C(/sbin), C(/bin)) under it,
        unless it is C(/), when this machine's E(PATH) and the directory of O(containerd_bin) are searched.
      - Not applied to O(containerd_bin), O(dump_file), O(socket) or O(crictl_bin), which are paths where the module runs.
        containerd runs unchanged, with O(config_path) as given; when O(host_root) is not C(/) it gets the environment variable
        E(RUNTIME_GATE_HOST_ROOT) set to it, so a wrapper (C(chroot), C(nsenter), a bind mount) can run it on the node's files.
        Such a wrapper must then be given as O(containerd_bin), unless O(dump_file) is.
      - Must be an existing directory.
      - Default C(/) when containerd runs. With O(dump_file) and no O(host_root), no file of the node is read at all, because
        a dump judged by itself may be another machine's capture, so this machine's C(/etc/containerd), drop-in and CDI dirs
        and binaries say nothing about it (the evidence then says the files were not examined).
    type: path
  dump_file:
    description:
      - A file on the node holding the output of C(containerd config dump) to judge instead of running the binary.
      - The running daemon is then not asked (O(ask_daemon) is ignored), since the file may be another node's capture. The daemon's
        view is reported as unknown with that reason, and the verdict is judged from the file.
      - An empty string counts as unset.
      - A file without the top-level C(version), C(root), C(state) and C(plugins) every dump prints (a C(config.toml), say)
        fails the task instead of being judged as if containerd had loaded it alone.
      - The binary is not run for it, not even for C(--version). The containerd release that printed the dump comes from
        O(containerd_version), else from a file C(containerd-version.txt) beside the dump (what C(containerd --version)
        printed when it was taken), else the controller infers the release family from the dump itself.
    type: path
  containerd_version:
    description:
      - The containerd release that printed O(dump_file) (C(1.7.35), or C(containerd --version) output). Only with O(dump_file).
    type: str
  timeout:
    description:
      - Seconds the whole node task may take - C(containerd config dump), C(containerd --version) and the CRI status call
        (crictl or gRPC) share them - before the gathering fails (the daemon's view is then not asked).
    type: int
    default: 60
  dropin_dirs:
    description:
      - Drop-in directories to list besides the directory of each C(imports) glob, so files no pattern matches show up.
      - The text of each regular C(*.toml) or C(*.conf) file in a listed directory that no C(imports) entry reached is read
        too (same size limit as the config files, at most 200 files), so the controller can tell which missing handler such
        a file defines.
    type: list
    elements: path
    default: [/etc/containerd/conf.d]
  cdi_spec_dirs:
    description:
      - CDI specification directories to list (what a C(*.cdi) runtime or the C(nvidia-cdi) handler needs).
    type: list
    elements: path
    default: [/etc/cdi, /var/run/cdi]
  ask_daemon:
    description:
      - Ask the running daemon for its CRI status (what it has loaded), over O(socket). Not with O(dump_file).
      - Uses C(crictl info) when O(crictl_bin) is found, else a gRPC call through C(grpcio) when the node's Python
        can import it, else records that neither is available (the daemon's view is then unknown, never assumed).
      - The playbooks call this C(runtime_gate_ask_daemon), the role C(containerd_runtimes_ask_daemon) (see docs/variables.md).
    type: bool
    default: true
  socket:
    description:
      - containerd's gRPC socket. k3s and rke2 use C(/run/k3s/containerd/containerd.sock), k0s C(/run/k0s/containerd.sock).
    type: path
    default: /run/containerd/containerd.sock
  crictl_bin:
    description:
      - The crictl binary, a name looked up in E(PATH) or an absolute path; when it is not found the gRPC client is used.
    type: str
    default: crictl
"""
