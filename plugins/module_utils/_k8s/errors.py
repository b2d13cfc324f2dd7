# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The one error of the Kubernetes access code: what was asked, of which server, and what came back."""

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError


class KubeAccessError(RuntimeGateError):
    """The cluster could not be read; ``server`` and ``http_status`` are None when unknown."""

    def __init__(self, message, server=None, http_status=None):
        super().__init__(message)
        self.server = server
        self.http_status = http_status

    def result_fields(self):
        """``msg`` plus ``server``/``http_status`` when known: what a module's ``fail_json`` returns."""
        known = {"server": self.server, "http_status": self.http_status}
        return {"msg": str(self), **{key: value for key, value in known.items() if value}}


class KubernetesLibraryMissing(KubeAccessError):
    """The ``kubernetes`` Python library is not importable (modules use ``missing_required_lib``)."""
