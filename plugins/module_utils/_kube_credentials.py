# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Kept for imports written before the split: the credentials code lives in ``_k8s/credentials.py``."""
# pylint: disable=unused-import

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.credentials import (  # noqa: F401
    MEMORY_FILE_DIRECTORY,
    InlineCredentialFiles,
    plaintext_credentials_warning,
    proxy_secrets,
)
