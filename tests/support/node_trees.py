"""Node file trees for the node evidence tests: files, executables, a node root with imports, drop-ins and binaries."""


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return str(path)


def executable(path, text="#!/bin/sh\nexit 1\n"):
    write(path, text)
    path.chmod(0o755)
    return str(path)


def node_tree(tmp_path):
    """A node filesystem under tmp_path/host: imports written as node paths, a drop-in, CDI spec, binaries."""
    host = tmp_path / "host"
    write(host / "etc/containerd/config.toml", 'version = 2\nimports = ["/etc/containerd/conf.d/*.toml", "conf.d/*.conf"]\n')
    write(host / "etc/containerd/conf.d/99-nvidia.toml", "version = 2\n")
    write(host / "etc/containerd/conf.d/10-relative.conf", "version = 2\n")
    write(host / "etc/cdi/nvidia.yaml", "cdiVersion: 0.5.0\n")
    executable(host / "usr/bin/nvidia-container-runtime")
    executable(host / "usr/local/sbin/runc")
    write(host / "usr/bin/containerd-shim-runc-v2", "not executable\n")
    return host
