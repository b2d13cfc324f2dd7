# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""kubernetes.core's cluster auth options: the one argument spec every Kubernetes module extends, and their resolution.

Controller side. The options and their descriptions are the doc fragment ``plugins/doc_fragments/k8s_auth_options.py``
(``DOCUMENTATION`` for ``AUTH_ARG_SPEC``, ``REQUEST_TIMEOUT`` for ``REQUEST_TIMEOUT_ARG_SPEC``); the contract test
holds each module's DOCUMENTATION to its spec.
"""

import copy
import os

from ansible.module_utils.basic import env_fallback
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.errors import KubeAccessError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.limits import DEFAULT_REQUEST_TIMEOUT

# Each option falls back to K8S_AUTH_<OPTION>, and like kubernetes.core also to the client-side
# spelling (K8S_AUTH_VERIFY_SSL, ...); the option's own name is looked up first.
AUTH_ARG_SPEC = {
    # raw, as in kubernetes.core: a dict reaches refuse_unsupported instead of becoming a path string.
    "kubeconfig": {"type": "raw", "fallback": (env_fallback, ["K8S_AUTH_KUBECONFIG"])},
    "context": {"type": "str", "fallback": (env_fallback, ["K8S_AUTH_CONTEXT"])},
    "host": {"type": "str", "fallback": (env_fallback, ["K8S_AUTH_HOST"])},
    "api_key": {"type": "str", "no_log": True, "fallback": (env_fallback, ["K8S_AUTH_API_KEY"])},
    # Verified unless explicitly false, whatever the kubeconfig says (docs/security.md); false warns.
    "validate_certs": {"type": "bool", "default": True, "aliases": ["verify_ssl"],
                       "fallback": (env_fallback, ["K8S_AUTH_VALIDATE_CERTS", "K8S_AUTH_VERIFY_SSL"])},
    "ca_cert": {"type": "path", "aliases": ["ssl_ca_cert"],
                "fallback": (env_fallback, ["K8S_AUTH_CA_CERT", "K8S_AUTH_SSL_CA_CERT"])},
    "client_cert": {"type": "path", "aliases": ["cert_file"],
                    "fallback": (env_fallback, ["K8S_AUTH_CLIENT_CERT", "K8S_AUTH_CERT_FILE"])},
    "client_key": {"type": "path", "aliases": ["key_file"],
                   "fallback": (env_fallback, ["K8S_AUTH_CLIENT_KEY", "K8S_AUTH_KEY_FILE"])},
    # A proxy URL can carry user:password (http://user:pw@proxy:3128): hidden like the token, also at -vvv.
    "proxy": {"type": "str", "no_log": True, "fallback": (env_fallback, ["K8S_AUTH_PROXY"])},
    # kubernetes.core's other connection options, so that one module_defaults block serves both collections: each is
    # taken with kubernetes.core's meaning or refused naming what to do instead (REFUSED), never ignored.
    "no_proxy": {"type": "str", "fallback": (env_fallback, ["K8S_AUTH_NO_PROXY"])},
    "persist_config": {"type": "bool", "fallback": (env_fallback, ["K8S_AUTH_PERSIST_CONFIG"])},
    "proxy_headers": {"type": "dict", "no_log": True},
    "impersonate_user": {"type": "str", "fallback": (env_fallback, ["K8S_AUTH_IMPERSONATE_USER"])},
    "impersonate_groups": {"type": "list", "elements": "str", "fallback": (env_fallback, ["K8S_AUTH_IMPERSONATE_GROUPS"])},
}
# kubernetes.core options this collection does not take, with what to do instead. A value that means the same as
# leaving the option out (persist_config false, an empty list) is no refusal.
REFUSED = {
    "proxy_headers": "put the proxy's user:password in the proxy URL (proxy: http://user:password@proxy:3128, hidden "
                     "from output like api_key); other headers cannot be set",
    "persist_config": "the collection never writes the kubeconfig: refresh the kubeconfig's token outside the run "
                      "(kubectl, the cloud's exec plugin) or give api_key",
    "impersonate_user": "give the credentials of that identity itself (its ServiceAccount token as api_key, or a "
                        "kubeconfig context for it; docs/rbac.yaml lists what it needs)",
    "impersonate_groups": "give the credentials of an identity in those groups (its ServiceAccount token as api_key, or "
                          "a kubeconfig context for it)",
    "kubeconfig": "write the kubeconfig to a file and give its path (kubeconfig or K8S_AUTH_KUBECONFIG)",
}
REQUEST_TIMEOUT_ARG_SPEC = {"request_timeout": {"type": "int", "default": DEFAULT_REQUEST_TIMEOUT}}
_ALIASES = {"verify_ssl": "validate_certs", "ssl_ca_cert": "ca_cert", "cert_file": "client_cert", "key_file": "client_key"}


def get_k8s_auth_argument_spec(request_timeout=True):
    """A fresh copy of the auth options (plus ``request_timeout`` unless false), for a module's argument spec."""
    spec = copy.deepcopy(AUTH_ARG_SPEC)
    if request_timeout:
        spec.update(copy.deepcopy(REQUEST_TIMEOUT_ARG_SPEC))
    return spec


def auth_options_of(params):
    """The auth options out of a module's ``params``, as ``build_api_client`` and ``insecure_warning`` take them."""
    return {name: params[name] for name in AUTH_ARG_SPEC}


def resolve_auth_options(options, environ=None):
    """Canonical option names, with ``K8S_AUTH_*`` filling what ``options`` leaves unset or None.

    For callers outside Ansible (the CLI); under Ansible the argument spec already did this,
    and applying it twice changes nothing.
    """
    resolved = _resolved(options, environ)
    refuse_unsupported(resolved)
    return resolved


def _resolved(options, environ=None):
    environ = os.environ if environ is None else environ
    resolved = {name: None for name in AUTH_ARG_SPEC}
    for key, value in (options or {}).items():
        name = _ALIASES.get(key, key)
        if name in resolved and value is not None:
            resolved[name] = value
    for name, spec in AUTH_ARG_SPEC.items():
        if resolved[name] is None:
            resolved[name] = next((environ[env] for env in spec.get("fallback", (None, ()))[1] if environ.get(env)), None)
    for name in ("validate_certs", "persist_config"):
        if resolved[name] is not None:
            resolved[name] = boolean(resolved[name], strict=False)
    if isinstance(resolved["impersonate_groups"], str):
        resolved["impersonate_groups"] = [group.strip() for group in resolved["impersonate_groups"].split(",") if group.strip()]
    for name in ("kubeconfig", "ca_cert", "client_cert", "client_key"):
        if resolved[name] and isinstance(resolved[name], str):
            resolved[name] = os.path.expanduser(os.path.expandvars(resolved[name]))
    return resolved


def refuse_unsupported(resolved):
    """Raise KubeAccessError naming the first kubernetes.core option set that this collection does not take, and what
    to do instead (REFUSED); a value that means "not set" passes."""
    for name, instead in REFUSED.items():
        value = resolved.get(name)
        if name == "kubeconfig":
            refused = value is not None and not isinstance(value, str)
        else:
            refused = value not in (None, False, [], {}, "")
        if refused:
            what = "a kubeconfig given as a dict" if name == "kubeconfig" else f"{name} is set"
            raise KubeAccessError(f"{what}, which kubernetes.core takes but gpufleet.runtime_gate does not: {instead}")


def insecure_warning(options):
    """The warning to show when ``validate_certs`` is off, else None."""
    if _resolved(options)["validate_certs"] is False:
        return ("validate_certs is false: the API server's certificate is not verified, so anyone on the network path "
                "can read the credentials sent and forge the cluster's answers; set ca_cert instead")
    return None
