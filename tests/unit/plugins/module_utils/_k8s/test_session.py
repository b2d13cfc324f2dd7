"""ApiSession's throttling rules without a server: the waits it takes are the ones Retry-After asked for."""
import email.utils
import io
import time

import pytest
from kubernetes.client.exceptions import ApiException

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.answers import retry_after_seconds as _retry_after_seconds
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.errors import KubeAccessError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.session import MAX_RETRY_AFTER, THROTTLE_RETRIES, ApiSession

OPTIONS = {"host": "https://api.example:6443", "api_key": "unit-test-token-0f3e"}


class Answer:
    """What a list call returns with _preload_content=False: a urllib3 response, read in chunks."""

    def __init__(self):
        self._body = io.BytesIO(b'{"kind": "RuntimeClassList", "items": []}')

    def read(self, amt=None):
        return self._body.read(amt)


def throttled(retry_after):
    err = ApiException(status=429, reason="Too Many Requests")
    err.headers = {} if retry_after is None else {"Retry-After": retry_after}
    err.body = '{"kind": "Status", "message": "Too many requests, please try again later."}'
    return err


def calls_answering(*answers):
    pending = list(answers)

    def call(**_kwargs):
        answer = pending.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer
    return call


def session(waits):
    return ApiSession(OPTIONS, sleep=waits.append)


@pytest.mark.parametrize("header,seconds", [("3", 3), (None, 1), ("soon", 1), ("0", 0)])
def test_retry_after_seconds(header, seconds):
    assert _retry_after_seconds({} if header is None else {"Retry-After": header}) == seconds


def test_retry_after_as_http_date():
    in_five = email.utils.formatdate(time.time() + 5, usegmt=True)
    assert 4 <= _retry_after_seconds({"Retry-After": in_five}) <= 6


def test_throttled_requests_wait_as_asked_then_succeed():
    waits = []
    with session(waits) as api:
        answer = api.request("listing x", calls_answering(throttled("2"), throttled(None), Answer()))
    assert answer["kind"] == "RuntimeClassList" and waits == [2, 1] and api.api_requests == 3


def test_throttling_gives_up_after_the_bound():
    waits = []
    with session(waits) as api, pytest.raises(KubeAccessError) as raised:
        api.request("listing x", calls_answering(*[throttled("1")] * (THROTTLE_RETRIES + 1)))
    assert waits == [1] * THROTTLE_RETRIES and raised.value.http_status == 429
    assert str(raised.value).startswith("listing x failed: HTTP 429 Too Many Requests: Too many requests")
    assert f"still throttled after {THROTTLE_RETRIES} retries over {THROTTLE_RETRIES} s" in str(raised.value)


def test_a_wait_longer_than_the_bound_is_not_taken():
    waits = []
    with session(waits) as api, pytest.raises(KubeAccessError) as raised:
        api.request("listing x", calls_answering(throttled(str(MAX_RETRY_AFTER + 1))))
    assert waits == [] and f"asked to retry after {MAX_RETRY_AFTER + 1} s" in str(raised.value)
    assert OPTIONS["api_key"] not in str(raised.value)
