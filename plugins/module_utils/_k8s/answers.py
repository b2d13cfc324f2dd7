# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""What an API server answered, in one sentence: list shapes, Status messages, transport and TLS failures, Retry-After.

Controller side. Pure functions over the raw answer; ``ApiSession`` (``_k8s/session.py``) calls them.
"""

import email.utils
import json
import math
import re
import time

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import cut_text, shown_value
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.client import urllib3

# A server's Status message is shown, but a hostile or broken server must not make it megabytes long.
MAX_SERVER_MESSAGE_CHARS = 300
HTTP_HINTS = {
    401: "the credentials were not accepted; check the token, client certificate or kubeconfig user",
    403: "the credentials lack this permission; docs/rbac.yaml lists what the collection needs",
    404: "the server does not serve this API: host must be the API server's root URL, and node.k8s.io/v1 "
         "RuntimeClasses need Kubernetes 1.20 or later",
    410: "the list changed faster than it could be read page by page, also after one fresh start; retry later or "
         "raise page_size",
}


def list_shape_problem(page, list_kind):
    """What makes ``page`` (a JSON object) something other than a well-formed ``list_kind``, else None.

    An HTTP 200 answer can still be a Status, another kind's list or an object without items (a proxy,
    a broken aggregated API): counting it as an empty list would judge every node against no RuntimeClass.
    """
    kind = page.get("kind")
    if kind is None:
        return f"the answer has no 'kind', expected a {list_kind}"
    if kind == "Status":
        status = page.get("status")
        text = f"the answer is a Status ({cut_text(status) if isinstance(status, str) and status else 'no status'}), " \
               f"not a {list_kind}"
        message = page.get("message")
        return text + (f": {cut_text(message, MAX_SERVER_MESSAGE_CHARS)}" if message else "")
    if kind != list_kind:
        shown = cut_text(kind) if isinstance(kind, str) else f"object of kind {shown_value(kind)}"
        return f"the answer is a {shown}, not a {list_kind}"
    if "items" not in page:
        return f"the {list_kind} has no 'items'"
    items = page["items"]
    if not isinstance(items, list):
        return f"the {list_kind}'s 'items' is {json_type(items, article=True)}, not a list"
    for number, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            return f"the {list_kind}'s item {number} is {json_type(item, article=True)}, not a mapping"
    metadata = page.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        return f"the {list_kind}'s 'metadata' is {json_type(metadata, article=True)}, not a mapping"
    token = (metadata or {}).get("continue")
    if token is not None and not isinstance(token, str):
        return f"the {list_kind}'s 'metadata.continue' is {json_type(token, article=True)}, not a string"
    return None


def json_type(value, article=False):
    if value is None:
        return "null"
    name = ("boolean" if isinstance(value, bool) else "number" if isinstance(value, (int, float))
            else "string" if isinstance(value, str) else "list" if isinstance(value, list)
            else "mapping" if isinstance(value, dict) else type(value).__name__)
    return f"a {name}" if article else name


def seconds_text(value):
    return f"{value:g}"


def retry_after_seconds(headers):
    """Retry-After in whole seconds (delta-seconds or an HTTP date); 1 when absent or unreadable."""
    value = str((headers or {}).get("Retry-After") or "").strip()
    if value.isdigit():
        return int(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return 1
    return max(0, math.ceil(when.timestamp() - time.time()))


def status_message(body):
    if not body:
        return None
    try:
        status = json.loads(body)
    except ValueError:
        first_line = str(body).strip().splitlines()[0] if str(body).strip() else ""
        return first_line[:200] or None
    if isinstance(status, dict) and status.get("message"):
        return cut_text(status["message"], MAX_SERVER_MESSAGE_CHARS)
    return None


def describe_transport_error(err, request_timeout, server):
    if isinstance(err, urllib3.exceptions.SSLError):
        return describe_tls_error(str(err))
    if isinstance(err, urllib3.exceptions.NameResolutionError):
        return "cannot resolve the server's host name"
    if isinstance(err, urllib3.exceptions.NewConnectionError):
        cause = "connection refused" if "refused" in str(err).lower() else "cannot connect"
        return f"{cause}; check the server address and that the API server is reachable"
    if isinstance(err, urllib3.exceptions.ProxyError):
        return "the proxy refused or failed the connection"
    if isinstance(err, (urllib3.exceptions.TimeoutError, TimeoutError)):
        return f"no answer within {request_timeout} s (request_timeout)"
    if isinstance(err, urllib3.exceptions.ProtocolError):
        hint = " (an http:// address for an HTTPS server does this)" if server.startswith("http://") else ""
        return f"the connection broke off mid-answer{hint}"
    return f"{type(err).__name__}: {err}".splitlines()[0]


def describe_tls_error(detail):
    if "CERTIFICATE_VERIFY_FAILED" in detail or "certificate verify failed" in detail:
        found = re.search(r"certificate verify failed: ([^()]+)", detail)
        reason = found.group(1).strip() if found else None
        return (f"TLS verification of the server certificate failed ({reason or 'untrusted certificate'}); "
                "set ca_cert to the cluster's CA bundle or fix the kubeconfig's certificate-authority")
    if "match" in detail and "hostname" in detail.lower():
        return "TLS failed: the server certificate does not name this host (check host / tls-server-name)"
    return "TLS handshake failed; check ca_cert, client_cert/client_key and the server address"
