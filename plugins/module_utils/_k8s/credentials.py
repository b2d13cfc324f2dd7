"""Credentials around the API client: inline kubeconfig keys kept off the disk, and what no message may quote.

Controller side. The ``kubernetes`` client writes each ``*-data`` field of a kubeconfig (``client-key-data``,
``client-certificate-data``, ``certificate-authority-data``) to a file of its own, since Python's ``ssl`` loads keys
only from files: ``mkstemp`` in TMPDIR, removed by an ``atexit`` hook (``kube_config._create_temp_file_with_content``,
kubernetes 37.x). A run killed before it exits (SIGKILL, SIGTERM, a CI timeout) would leave the client key there.
Here the client writes into a private directory (mode 0700) instead; each file is then moved into an anonymous memory
file (Linux ``memfd_create``: it goes with the process, however the process ends) and the directory is removed before
any request is sent. Without ``memfd_create`` the files stay in that directory until the session ends (or exit).
"""

import atexit
import os
import shutil
import tempfile
import urllib.parse

MEMORY_FILE_DIRECTORY = "/proc/self/fd"
_CONFIGURATION_FILES = ("cert_file", "key_file", "ssl_ca_cert")


class InlineCredentialFiles:
    """The private directory the client writes inline kubeconfig data into, and the memory files that replace it."""

    def __init__(self):
        self.directory = tempfile.mkdtemp(prefix="runtime-gate-kubeconfig-")
        self._descriptors = []
        atexit.register(self.close)

    def keep_off_disk(self, configuration, client_cache=None):
        """Point ``configuration`` at memory copies of the files written here, then remove them from the disk."""
        for attribute in _CONFIGURATION_FILES:
            path = getattr(configuration, attribute, None)
            if path and os.path.dirname(os.path.abspath(path)) == self.directory:
                setattr(configuration, attribute, self._memory_file(path))
        # The client reuses a file it wrote for the same content: it must not be handed a path removed here.
        for content, path in list((client_cache or {}).items()):
            if os.path.dirname(os.path.abspath(path)) == self.directory:
                del client_cache[content]
        if self._descriptors or not os.listdir(self.directory):
            shutil.rmtree(self.directory, ignore_errors=True)

    def _memory_file(self, path):
        if not hasattr(os, "memfd_create") or not os.path.isdir(MEMORY_FILE_DIRECTORY):
            return path
        with open(path, "rb") as handle:
            content = handle.read()
        descriptor = os.memfd_create("runtime-gate-kubeconfig-data")
        os.write(descriptor, content)
        self._descriptors.append(descriptor)
        os.unlink(path)
        return f"{MEMORY_FILE_DIRECTORY}/{descriptor}"

    def close(self):
        shutil.rmtree(self.directory, ignore_errors=True)
        for descriptor in self._descriptors:
            try:
                os.close(descriptor)
            except OSError:
                pass
        self._descriptors = []


def proxy_secrets(proxy_url):
    """The parts of a proxy URL a message must not show: its password, and the userinfo holding it."""
    if not proxy_url:
        return []
    try:
        parts = urllib.parse.urlsplit(proxy_url)
        password = parts.password
    except ValueError:
        return [proxy_url]
    userinfo = parts.netloc.rpartition("@")[0]
    return [value for value in (password, userinfo, urllib.parse.unquote(password or "")) if value]


def plaintext_credentials_warning(server, sends_token):
    """The warning for a bearer token sent to an ``http://`` server, else None."""
    if sends_token and server and server.lower().startswith("http://"):
        return (f"the API server address {server} is http://: the bearer token is sent unencrypted, so anyone on the "
                "network path can read it and act as this client; use the server's https:// address")
    return None
