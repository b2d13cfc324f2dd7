# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Paths a user passes, resolved where the user typed them: relative to the directory ansible-playbook runs in.

Controller side (action plugins). ansible-core runs a module over the local connection in the *playbook's*
directory (``ActionBase._low_level_execute_command`` sets the connection's cwd to the loader's basedir), so a
relative ``-e runtime_gate_runtimeclasses_file=inventory/demo/cluster.yaml`` given from the checkout root would
be looked for under ``playbooks/``. The action plugins make such paths absolute against the controller's working
directory before the module gets them. A path for a remote node is left alone: it is the node's business.
"""

import os

# kubernetes.core's path options of runtimeclass_info (with their aliases) and the variables each falls back to,
# in _k8s/auth.AUTH_ARG_SPEC's order.
K8S_AUTH_PATH_OPTIONS = (
    (("kubeconfig",), ("K8S_AUTH_KUBECONFIG",)),
    (("ca_cert", "ssl_ca_cert"), ("K8S_AUTH_CA_CERT", "K8S_AUTH_SSL_CA_CERT")),
    (("client_cert", "cert_file"), ("K8S_AUTH_CLIENT_CERT", "K8S_AUTH_CERT_FILE")),
    (("client_key", "key_file"), ("K8S_AUTH_CLIENT_KEY", "K8S_AUTH_KEY_FILE")),
)


def controller_path(path, cwd=None):
    """``path`` with ``~`` and ``$VARS`` expanded, made absolute against ``cwd`` (default: this process's cwd).

    Empty or non-string values come back unchanged (an empty string means "unset" to the modules).
    """
    if not isinstance(path, str) or not path:
        return path
    expanded = os.path.expanduser(os.path.expandvars(path))
    if os.path.isabs(expanded):
        return expanded
    return os.path.normpath(os.path.join(cwd or os.getcwd(), expanded))


def program_path(program, cwd=None):
    """A program given as a relative path (``bin/containerd-wrapper``) made absolute; a bare name stays a PATH lookup."""
    if not isinstance(program, str) or "/" not in program:
        return program
    return controller_path(program, cwd)


def runs_on_controller(connection):
    """True when the task's module runs on the controller (the local connection, e.g. ``delegate_to: localhost``)."""
    return getattr(connection, "transport", None) == "local"


def resolve_args(args, path_args=(), program_args=(), cwd=None):
    """A copy of module ``args`` with ``path_args`` (and ``program_args`` that hold a ``/``) made controller-absolute."""
    resolved = dict(args)
    for name in path_args:
        if name in resolved:
            resolved[name] = controller_path(resolved[name], cwd)
    for name in program_args:
        if name in resolved:
            resolved[name] = program_path(resolved[name], cwd)
    return resolved


def resolve_k8s_auth_paths(args, environ=None, cwd=None):
    """``args`` with the kubeconfig, CA and client certificate paths controller-absolute.

    An option the task leaves unset falls back to its ``K8S_AUTH_*`` variable in the module; a relative value of
    that variable is passed as the option instead, made absolute, so the module reads the file the user meant.
    """
    environ = os.environ if environ is None else environ
    resolved = dict(args)
    for names, variables in K8S_AUTH_PATH_OPTIONS:
        given = [name for name in names if resolved.get(name) not in (None, "")]
        if given:
            for name in given:
                resolved[name] = controller_path(resolved[name], cwd)
            continue
        value = next((environ[variable] for variable in variables if environ.get(variable)), None)
        if value and not os.path.isabs(os.path.expanduser(os.path.expandvars(value))):
            resolved[names[0]] = controller_path(value, cwd)
    return resolved
