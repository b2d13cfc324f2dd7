# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""An isolated ``kubernetes.client.ApiClient`` from the auth options, in kubernetes.core's resolution order.

Controller side. Without the ``kubernetes`` library, ``HAS_KUBERNETES`` is false (modules then fail with
``missing_required_lib``) and ``build_api_client`` raises ``KubernetesLibraryMissing``.
"""

import os
import traceback

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.auth import resolve_auth_options
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.credentials import (
    InlineCredentialFiles,
    plaintext_credentials_warning,
    proxy_secrets,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.errors import KubeAccessError, KubernetesLibraryMissing

try:
    import urllib3  # pylint: disable=unused-import  # for _k8s/session.py and _k8s/answers.py
    import yaml
    from kubernetes import client as kube_client
    from kubernetes import config as kube_config
    from kubernetes.client.exceptions import ApiException  # pylint: disable=unused-import  # for _k8s/session.py
    from kubernetes.config.config_exception import ConfigException
except ImportError:
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()
    urllib3 = yaml = kube_client = kube_config = ApiException = ConfigException = None
else:
    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None


def build_api_client(options):
    """An isolated ``kubernetes.client.ApiClient`` following kubernetes.core's resolution order.

    host+api_key or host+client_cert+client_key: no file is read. Else kubeconfig or context
    given: that kubeconfig (default location if only a context). Else in-cluster service account,
    then the default kubeconfig. Explicit options then override what was loaded.

    Certificates are verified unless ``validate_certs`` is false: a kubeconfig's
    ``insecure-skip-tls-verify`` alone does not turn verification off (see docs/security.md).
    """
    _require_library()
    auth = resolve_auth_options(options)
    configuration = kube_client.Configuration()
    secrets = [auth["api_key"]] if auth["api_key"] else []
    secrets += proxy_secrets(auth["proxy"])
    credentials_given = auth["host"] and (auth["api_key"] or (auth["client_cert"] and auth["client_key"]))
    inline_files = InlineCredentialFiles()
    try:
        if not credentials_given and (auth["kubeconfig"] or auth["context"]):
            _load_kubeconfig(configuration, auth["kubeconfig"], auth["context"], secrets, inline_files.directory)
        elif not credentials_given:
            try:
                kube_config.load_incluster_config(client_configuration=configuration)
            except ConfigException:
                _load_kubeconfig(configuration, None, None, secrets, inline_files.directory)
        inline_files.keep_off_disk(configuration, getattr(kube_config.kube_config, "_temp_files", None))
    except BaseException:
        inline_files.close()
        raise
    kubeconfig_skips_tls = configuration.verify_ssl is False
    if auth["host"]:
        configuration.host = auth["host"].rstrip("/")
    if auth["api_key"]:
        # A kubeconfig token lives under 'BearerToken', which the client prefers; drop it and its refresh hook.
        configuration.api_key = {"authorization": f"Bearer {auth['api_key']}"}
        configuration.refresh_api_key_hook = None
    for option, attribute in (("ca_cert", "ssl_ca_cert"), ("client_cert", "cert_file"), ("client_key", "key_file"),
                              ("proxy", "proxy"), ("no_proxy", "no_proxy")):
        if auth[option] is not None:
            setattr(configuration, attribute, auth[option])
    configuration.verify_ssl = auth["validate_certs"] is not False
    for path_option in ("ca_cert", "client_cert", "client_key"):
        if auth[path_option] and not os.path.isfile(auth[path_option]):
            raise KubeAccessError(f"{path_option} '{auth[path_option]}' does not exist or is not a file")
    if configuration.host in (None, "", "http://localhost"):
        raise KubeAccessError("no API server address: set host, or a kubeconfig whose cluster has a server")
    if not configuration.host.startswith(("https://", "http://")):
        raise KubeAccessError(f"API server address '{configuration.host}' must start with https:// (or http://)")
    # Fail fast with the real cause instead of urllib3 retry noise; 429 is retried by ApiSession.
    configuration.retries = False
    api_client = kube_client.ApiClient(configuration)
    api_client.kubeconfig_skips_tls = kubeconfig_skips_tls and configuration.verify_ssl
    api_client.inline_credential_files = inline_files
    sends_token = any(configuration.api_key.values()) or bool(configuration.refresh_api_key_hook)
    warning = plaintext_credentials_warning(configuration.host, sends_token)
    api_client.credential_warnings = [warning] if warning else []
    return api_client


def _load_kubeconfig(configuration, path, context, secrets, inline_files_directory=None):
    shown = f"kubeconfig '{path}'" if path else "the default kubeconfig ($KUBECONFIG or ~/.kube/config)"
    if context:
        shown += f" (context '{context}')"
    if path and not os.path.isfile(path):
        raise KubeAccessError(f"cannot load {shown}: the file does not exist")
    default_paths = kube_config.KUBE_CONFIG_DEFAULT_LOCATION.split(os.pathsep)
    if not path and not context and not any(os.path.isfile(os.path.expanduser(p)) for p in default_paths):
        raise KubeAccessError(
            "no cluster credentials: not running in a pod, and no kubeconfig at $KUBECONFIG or ~/.kube/config; "
            "set kubeconfig (K8S_AUTH_KUBECONFIG), or host with api_key or client_cert/client_key")
    try:
        # Inline *-data is written into a private directory, then moved off the disk (_kube_credentials).
        kube_config.load_kube_config(config_file=path, context=context, client_configuration=configuration,
                                     persist_config=False, temp_file_path=inline_files_directory)
    except Exception as err:  # pylint: disable=broad-except
        raise KubeAccessError(f"cannot load {shown}: {_describe_kubeconfig_error(err, secrets)}") from None


def _describe_kubeconfig_error(err, secrets):
    if isinstance(err, yaml.YAMLError):
        # PyYAML's own text quotes the offending line, which may hold a token: keep only the position.
        mark = getattr(err, "problem_mark", None)
        return f"not valid YAML at line {mark.line + 1}" if mark else "not valid YAML"
    text = str(err).splitlines()[0] if str(err) else type(err).__name__
    for secret in secrets:
        text = text.replace(secret, "<redacted>")
    return text


def _require_library():
    if not HAS_KUBERNETES:
        raise KubernetesLibraryMissing(
            "the Python library 'kubernetes' is required to read the cluster (pip install 'kubernetes>=37.0.2'); "
            "a manifest file (src) does not need it")
