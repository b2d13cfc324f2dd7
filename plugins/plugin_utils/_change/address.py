# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Where containerd answers: the gRPC address a loaded configuration (a ``config dump``) names. Controller side, pure.

A dump is printed at the binary's own config version, so one reader serves every file version: containerd 1.x and
2.0-2.2 (versions 2 and 3) keep the socket in the top-level ``[grpc] address``; 2.3+ (version 4) in
``[plugins."io.containerd.server.v1.grpc"] address`` (checked on the real binaries' ``config default``: 1.6.20, 2.2.9,
2.3.4, 2.4.2; a version 3 file's ``[grpc]`` is migrated there by ``serviceMigrate``, cmd/containerd/server/config/config.go
@v2.3.4). An empty address is containerd's default socket.
"""

DEFAULT_ADDRESS = "/run/containerd/containerd.sock"
GRPC_SERVER_PLUGIN = "io.containerd.server.v1.grpc"


def grpc_address(loaded):
    """The socket the loaded configuration ``loaded`` (``_change/loaded_config.LoadedConfig``) listens on; the default
    when it names none or is not known (None)."""
    document = loaded.document if loaded is not None else {}
    plugins = document.get("plugins") if isinstance(document.get("plugins"), dict) else {}
    for table in (plugins.get(GRPC_SERVER_PLUGIN), document.get("grpc")):
        address = table.get("address") if isinstance(table, dict) else None
        if isinstance(address, str) and address:
            return address
    return DEFAULT_ADDRESS


# Each attempt of the wait is bounded by ctr itself: without them, ctr 1.6 to 2.4 waits 10 s for a socket that accepts
# but does not answer, so the role's wait (one attempt a second) would last about eleven times its timeout.
WAIT_ATTEMPT_TIMEOUTS = ["--connect-timeout", "1s", "--timeout", "1s"]


def wait_command(address):
    """The default wait command: containerd's own client asking the daemon on that socket for its version."""
    return ["ctr", "--address", address, *WAIT_ATTEMPT_TIMEOUTS, "version"]


def daemon_endpoints(*, socket, wait, current, candidate):
    """``{"socket", "wait_command", "restored_socket", "restored_wait_command"}``: the inputs where given, else
    the address of the candidate (after the restart) and of today's files (after a rollback)."""
    after = socket or grpc_address(candidate)
    before = socket or grpc_address(current)
    return {"socket": after, "wait_command": list(wait) if wait else wait_command(after),
            "restored_socket": before, "restored_wait_command": list(wait) if wait else wait_command(before)}
