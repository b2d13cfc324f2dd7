# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The apiserver's name rules, written once: a RuntimeClass handler, a namespace and a runtime name are DNS-1123
labels; object names and label key prefixes are DNS-1123 subdomains.

k8s.io/apimachinery/pkg/util/validation ``IsDNS1123Label`` / ``IsDNS1123Subdomain``. The patterns carry their length
limits and are used with ``fullmatch`` (``$`` also matches before a trailing newline, so ``"nvidia\\n"`` would pass).
"""

import re

DNS_LABEL_MAX = 63
DNS_SUBDOMAIN_MAX = 253
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
DNS_SUBDOMAIN = re.compile(r"(?=.{1,253}\Z)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
LABEL_RULE = "a DNS-1123 label (lowercase letters, digits and '-', at most 63 characters)"
SUBDOMAIN_RULE = "a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', at most 253 characters)"


def is_dns_label(value):
    """True for a string the apiserver accepts as a DNS-1123 label."""
    return isinstance(value, str) and DNS_LABEL.fullmatch(value) is not None


def is_dns_subdomain(value):
    """True for a string the apiserver accepts as a DNS-1123 subdomain."""
    return isinstance(value, str) and DNS_SUBDOMAIN.fullmatch(value) is not None
