# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""One API client for a few calls: every request bounded and counted, throttling retried, every failure one sentence.

Controller side. Every run is bounded (docs/security.md): each request has a deadline for its whole answer, each list a
page budget and a time budget (``_k8s/limits.py``), and an answer counts only when it is a well-formed list of the
kind asked for (``_k8s/answers.py``). No token, client key or kubeconfig content ever appears in a message.
"""

import threading
import time
import warnings

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import cut_text, shown_value
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._strict_json import StrictJsonError, loads_strict
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.answers import (
    HTTP_HINTS,
    describe_tls_error,
    describe_transport_error,
    list_shape_problem,
    retry_after_seconds,
    seconds_text,
    status_message,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.client import ApiException, build_api_client, urllib3
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.credentials import proxy_secrets
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.errors import KubeAccessError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.inflight import cut, forget, watch_connections
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.limits import DEFAULT_REQUEST_TIMEOUT, resolve_limits

# 429 (API Priority and Fairness): wait as Retry-After asks, a few times, a few seconds each; a run
# scheduled nightly is better failed with a clear message than stalled behind an overloaded server.
THROTTLE_RETRIES = 3
MAX_RETRY_AFTER = 10
# A request cut at its deadline (its socket shut) ends at once; this only bounds the wait for it to say so.
CUT_REQUEST_GRACE = 5
REQUEST_THREAD_NAME = "runtime-gate-api-request"


class ApiSession:
    """One API client for a few calls: every request counted, throttling retried, every failure a ``KubeAccessError``.

    Use as a context manager; ``request(asked, call, **kwargs)`` returns the answer's JSON object.
    ``limits`` as ``resolve_limits`` takes them (None: environment, then defaults).
    """

    def __init__(self, options, request_timeout=DEFAULT_REQUEST_TIMEOUT, sleep=time.sleep, limits=None):
        if not isinstance(request_timeout, (int, float)) or isinstance(request_timeout, bool) or request_timeout <= 0:
            raise KubeAccessError(
                f"request_timeout must be a positive number of seconds, not {shown_value(request_timeout)}")
        self.limits = resolve_limits(limits)
        self.client = build_api_client(options)
        watch_connections(self.client.rest_client.pool_manager)
        self.server = self.client.configuration.host
        self.request_timeout = request_timeout
        self.secrets = [value for value in self.client.configuration.api_key.values() if value]
        self.secrets += proxy_secrets(self.client.configuration.proxy)
        self.warnings = list(self.client.credential_warnings)
        self.api_requests = 0
        self._sleep = sleep
        self._warnings = None

    def __enter__(self):
        self._warnings = warnings.catch_warnings()
        self._warnings.__enter__()
        # validate_certs=false was asked for explicitly and warned about once; urllib3 would warn on every request.
        warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
        return self

    def __exit__(self, *exc_info):
        self._warnings.__exit__(*exc_info)
        self.client.close()
        self.client.inline_credential_files.close()

    def list_all(self, what, list_call, page_size, *, list_kind, **selectors):
        """Every item of a list of kind ``list_kind`` (``RuntimeClassList``...), page by page.

        An expired continue token (410) restarts the list once. Each page must be a well-formed ``list_kind``;
        the list must end within ``list_page_budget`` pages and ``list_time_budget`` seconds, and a continue
        token the server already sent fails it at once (it would loop for ever).
        """
        asked = f"listing {what} from {self.server}"
        page_budget, time_budget = self.limits["list_page_budget"], self.limits["list_time_budget"]
        list_deadline = (time.monotonic() + time_budget, time_budget)
        items = []
        continue_token = None
        restarted = False
        page_of_token = {}
        pages = 0
        while True:
            if pages >= page_budget:
                raise KubeAccessError(
                    f"{asked} failed: the list did not end within {page_budget} pages (list_page_budget); the server "
                    "keeps sending continue tokens: raise page_size or list_page_budget if the cluster really is that "
                    "large", self.server)
            pages += 1
            try:
                page = self.request(asked, list_call, limit=page_size, _continue=continue_token,
                                    list_deadline=list_deadline, **selectors)
            except KubeAccessError as err:
                # 410: the continue token expired mid-list; start over once for a consistent list.
                if err.http_status == 410 and continue_token and not restarted:
                    restarted, items, continue_token, page_of_token = True, [], None, {}
                    continue
                raise
            problem = list_shape_problem(page, list_kind)
            if problem:
                raise KubeAccessError(f"{asked} failed: {problem}", self.server)
            items.extend(page["items"])
            next_token = (page.get("metadata") or {}).get("continue")
            if not next_token:
                return items
            if next_token in page_of_token:
                raise KubeAccessError(
                    f"{asked} failed: page {pages} carries a continue token the server already sent on page "
                    f"{page_of_token[next_token]}: the list would never end", self.server)
            page_of_token[next_token] = pages
            continue_token = next_token

    def request(self, asked, call, *args, list_deadline=None, **kwargs):
        """``call(*args, **kwargs)`` as raw JSON; 429 is retried as Retry-After asks, at most THROTTLE_RETRIES times.

        The whole answer must arrive within ``request_deadline`` seconds, and before ``list_deadline``
        (``(monotonic time, list_time_budget)``) when the request is a page of a list.
        """
        waited = 0
        for attempt in range(THROTTLE_RETRIES + 1):
            try:
                return self._request_once(asked, call, args, kwargs, list_deadline)
            except _Throttled as throttled:
                if throttled.retry_after > MAX_RETRY_AFTER:
                    raise self._error(asked, 429, throttled.reason, throttled.body,
                                      f"the server asked to retry after {throttled.retry_after} s, longer than the "
                                      f"{MAX_RETRY_AFTER} s this check waits; retry later") from None
                if attempt == THROTTLE_RETRIES:
                    raise self._error(asked, 429, throttled.reason, throttled.body,
                                      f"still throttled after {THROTTLE_RETRIES} retries over {waited} s, waiting as "
                                      "Retry-After asked; retry later, or give this client a larger API Priority and "
                                      "Fairness share") from None
                self._sleep(throttled.retry_after)
                waited += throttled.retry_after
        raise AssertionError("unreachable")

    def _request_once(self, asked, call, args, kwargs, list_deadline):
        seconds_allowed, out_of_time = self._time_allowed(asked, list_deadline)
        self.api_requests += 1
        # request_timeout applies per socket read; only a thread of its own can bound the whole answer. When it is
        # given up on, the socket it reads from is shut (_k8s/inflight.py), headers or body alike, so it ends now.
        outcome = {}

        def fetch():
            try:
                response = call(*args, _preload_content=False, _request_timeout=self.request_timeout, **kwargs)
                outcome["response"] = response
                outcome["body"] = _read_whole(response, self.limits["max_response_bytes"])
            except BaseException as err:  # pylint: disable=broad-except
                outcome["error"] = err  # raised again in the caller's thread, which describes it
            finally:
                forget()

        worker = threading.Thread(target=fetch, name=REQUEST_THREAD_NAME, daemon=True)
        worker.start()
        worker.join(seconds_allowed)
        if worker.is_alive():
            cut(worker)
            worker.join(CUT_REQUEST_GRACE)
            raise KubeAccessError(out_of_time, self.server)
        try:
            if "error" in outcome:
                raise outcome["error"]
            body = outcome["body"]
        except ApiException as err:
            if err.status == 429:
                raise _Throttled(retry_after_seconds(err.headers), err.reason, err.body) from None
            raise self._error(asked, err.status, err.reason, err.body) from None
        except urllib3.exceptions.HTTPError as err:
            described = describe_transport_error(err, self.request_timeout, self.server)
            raise KubeAccessError(self._redact(f"{asked} failed: {described}{self._tls_hint(err)}"), self.server) from None
        except _TooLarge:
            raise KubeAccessError(
                f"{asked} failed: the answer is larger than {self.limits['max_response_bytes']} bytes once decoded "
                "(max_response_bytes): no API server sends that for this list; a hostile or broken server, or a proxy in "
                "the way", self.server) from None
        except (ValueError, TypeError, OSError) as err:
            raise KubeAccessError(self._redact(f"{asked} failed: {type(err).__name__}: {err}".splitlines()[0]),
                                  self.server) from None
        try:
            # The same rule as the file reader: a key given twice or NaN is no answer an API server gives.
            answer = loads_strict(body)
        except StrictJsonError as err:
            raise KubeAccessError(f"{asked} failed: the answer is not JSON (is this a Kubernetes API server?): "
                                  f"{cut_text(str(err), 160)}", self.server) from None
        if not isinstance(answer, dict):
            raise KubeAccessError(f"{asked} failed: the answer is not a Kubernetes object or list", self.server)
        return answer

    def _time_allowed(self, asked, list_deadline):
        """``(seconds the next request may take, the message when they run out)``; raises when none are left."""
        deadline = self.limits["request_deadline"]
        out_of_deadline = (f"{asked} failed: the whole answer did not arrive within {seconds_text(deadline)} s "
                           "(request_deadline; request_timeout bounds each read only)")
        if list_deadline is None:
            return deadline, out_of_deadline
        give_up_at, time_budget = list_deadline
        out_of_budget = f"{asked} failed: the list was not read whole within {seconds_text(time_budget)} s (list_time_budget)"
        left = give_up_at - time.monotonic()
        if left <= 0:
            raise KubeAccessError(out_of_budget, self.server)
        return (left, out_of_budget) if left < deadline else (deadline, out_of_deadline)

    def _error(self, asked, status, reason, body, explanation=None):
        if not status:
            # rest.py turns TLS failures into ApiException(status=0, reason="SSLError\n<detail>").
            detail = (reason or "").split("\n", 1)[-1]
            hint = " (the kubeconfig's insecure-skip-tls-verify is ignored unless validate_certs is false)" \
                if self.client.kubeconfig_skips_tls else ""
            return KubeAccessError(self._redact(f"{asked} failed: {describe_tls_error(detail)}{hint}"), self.server)
        text = f"{asked} failed: HTTP {status} {reason or ''}".rstrip()
        server_message = status_message(body)
        if server_message:
            text += f": {server_message}"
        if explanation:
            text += f" ({explanation})"
        elif status in HTTP_HINTS:
            text += f" ({HTTP_HINTS[status]})"
        elif status >= 500:
            text += " (a server-side failure; retry later or check the API server's health)"
        return KubeAccessError(self._redact(text), self.server, http_status=status)

    def _tls_hint(self, err):
        if self.client.kubeconfig_skips_tls and isinstance(err, urllib3.exceptions.SSLError):
            return " (the kubeconfig's insecure-skip-tls-verify is ignored unless validate_certs is false)"
        return ""

    def _redact(self, text):
        for secret in self.secrets:
            bare = secret.split(" ", 1)[-1]
            for value in (secret, bare):
                if len(value) >= 4:
                    text = text.replace(value, "<redacted>")
        return text


def _read_whole(response, max_bytes):
    """The whole body of a urllib3 response, read in decoded chunks (a gzip body counts inflated; urllib3 2.x
    decodes at most what is asked for per read) and given up past ``max_bytes`` (a thread bounds how long it takes)."""
    chunks, size = [], 0
    while True:
        chunk = response.read(64 * 1024)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > max_bytes:
            _abandon(response)
            raise _TooLarge()
        chunks.append(chunk)


class _TooLarge(Exception):
    """The decoded body passed max_response_bytes."""


def _abandon(response):
    """Shut the connection of an answer given up on, so the thread still reading it ends now."""
    if response is None:
        return
    try:
        response.shutdown()  # urllib3 2.3+: unblocks a read in progress in another thread
    except (AttributeError, NotImplementedError, OSError, RuntimeError, ValueError):
        pass  # older urllib3, or already released: the thread ends at the server's next stop or request_timeout


class _Throttled(Exception):
    def __init__(self, retry_after, reason, body):
        super().__init__(reason)
        self.retry_after = retry_after
        self.reason = reason
        self.body = body
