"""Cluster connection options shared by the collection's Kubernetes modules (kubernetes.core's names)."""


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to a kubeconfig file.
      - A kubeconfig given as a dictionary (which C(kubernetes.core) accepts) is refused; write it to a file and give
        its path.
      - Without O(host) plus O(api_key) (or plus O(client_cert) and O(client_key)), the connection is
        taken from this file; with neither O(kubeconfig) nor O(context) set, the in-cluster service
        account is tried first, then C($KUBECONFIG) or C(~/.kube/config).
      - Can also be set with the E(K8S_AUTH_KUBECONFIG) environment variable.
    type: raw
  context:
    description:
      - The kubeconfig context to use instead of its C(current-context).
      - Can also be set with the E(K8S_AUTH_CONTEXT) environment variable.
    type: str
  host:
    description:
      - URL of the Kubernetes API server, for example C(https://10.0.0.1:6443).
      - Overrides the server of the kubeconfig.
      - Can also be set with the E(K8S_AUTH_HOST) environment variable.
    type: str
  api_key:
    description:
      - Bearer token to authenticate with. Never logged nor shown in output, error messages or reports (C(no_log)).
      - Can also be set with the E(K8S_AUTH_API_KEY) environment variable.
    type: str
  validate_certs:
    description:
      - Whether to verify the API server's TLS certificate.
      - Verified unless this is V(false), also when the kubeconfig sets C(insecure-skip-tls-verify) (unlike
        C(kubernetes.core)), so that turning verification off is always an explicit choice of the playbook.
      - V(false) prints a warning on every run; prefer O(ca_cert).
      - Can also be set with the E(K8S_AUTH_VALIDATE_CERTS) or E(K8S_AUTH_VERIFY_SSL) environment variables.
    type: bool
    default: true
    aliases: [verify_ssl]
  ca_cert:
    description:
      - Path to a CA bundle to verify the API server's certificate with.
      - Can also be set with the E(K8S_AUTH_CA_CERT) or E(K8S_AUTH_SSL_CA_CERT) environment variables.
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description:
      - Path to a client certificate to authenticate with, together with O(client_key).
      - Can also be set with the E(K8S_AUTH_CLIENT_CERT) or E(K8S_AUTH_CERT_FILE) environment variables.
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - Path to the private key of O(client_cert).
      - Can also be set with the E(K8S_AUTH_CLIENT_KEY) or E(K8S_AUTH_KEY_FILE) environment variables.
    type: path
    aliases: [key_file]
  proxy:
    description:
      - URL of an HTTP(S) proxy to reach the API server through.
      - E(HTTPS_PROXY) is not read; set this option or E(K8S_AUTH_PROXY).
      - It may carry C(user:password@); like O(api_key) it is never shown in task output, also at C(-vvv).
    type: str
  no_proxy:
    description:
      - Comma-separated hosts, domains, IP addresses or CIDRs reached without O(proxy), as in C(kubernetes.core).
      - E(NO_PROXY) is not read; set this option or E(K8S_AUTH_NO_PROXY).
    type: str
  persist_config:
    description:
      - Accepted for a C(module_defaults) block shared with C(kubernetes.core). V(false) (or unset) is what this
        collection always does, never writing refreshed tokens back to the kubeconfig; V(true) is refused with a
        message saying what to do instead.
      - Can also be set with the E(K8S_AUTH_PERSIST_CONFIG) environment variable.
    type: bool
  proxy_headers:
    description:
      - Accepted for a C(module_defaults) block shared with C(kubernetes.core), but refused when set; put the proxy's
        C(user:password) in O(proxy) instead.
    type: dict
  impersonate_user:
    description:
      - Accepted for a C(module_defaults) block shared with C(kubernetes.core), but refused when set; give that
        identity's own credentials (O(api_key), or a kubeconfig context) instead.
      - Can also be set with the E(K8S_AUTH_IMPERSONATE_USER) environment variable.
    type: str
  impersonate_groups:
    description:
      - Accepted for a C(module_defaults) block shared with C(kubernetes.core), but refused when set (a non-empty
        list); give the credentials of an identity in those groups instead.
      - Can also be set with the E(K8S_AUTH_IMPERSONATE_GROUPS) environment variable (C(Group1,Group2)).
    type: list
    elements: str
notes:
  - The options follow the names of the C(kubernetes.core) collection's C(k8s_auth_options), so one
    C(module_defaults) block for C(group/gpufleet.runtime_gate.k8s) carries them to every module of the group.
requirements:
  - kubernetes >= 37.0.2 (Python library, on the host that runs the module)
"""

    # Modules that call the API (not the inventory plugin, which takes its options from its config file).
    REQUEST_TIMEOUT = r"""
options:
  request_timeout:
    description:
      - Seconds to wait for each API request before failing.
    type: int
    default: 30
"""
