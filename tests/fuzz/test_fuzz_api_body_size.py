"""Body size: a real loopback HTTP server answers the RuntimeClass list with bodies of every size class, plain and
gzip (issue 22 item 5: a 1 MB gzip body inflating to 1 GiB was read whole, 2.3 GB RSS). Each answer past
max_response_bytes once decoded ends the read with one message naming the limit; each one within it is read.
"""
import gzip
import http.server
import json
import threading

import pytest
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.errors import KubeAccessError
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.lists import list_cluster_objects

LIMIT = 1024 * 1024
EMPTY_LIST = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClassList", "metadata": {}, "items": []}


def padded_list(size):
    """A well-formed RuntimeClassList of exactly ``size`` bytes (padding in a metadata field the reader ignores)."""
    text = json.dumps(dict(EMPTY_LIST, metadata={"resourceVersion": ""}))
    return text.replace('"resourceVersion": ""', '"resourceVersion": "' + "0" * (size - len(text)) + '"').encode()


class Answers(http.server.BaseHTTPRequestHandler):
    body, gzipped = b"", False

    def do_GET(self):  # noqa: N802 - http.server's name
        body = gzip.compress(self.body, compresslevel=9) if self.gzipped else self.body
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if self.gzipped:
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up past its limit: what the test wants

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answers)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize("size", [LIMIT // 2, LIMIT, LIMIT + 1, 4 * LIMIT, 64 * LIMIT])
@pytest.mark.parametrize("gzipped", [False, True])
def test_a_body_is_read_within_the_cap_and_refused_past_it_plain_or_gzip(server, size, gzipped):
    Answers.body, Answers.gzipped = padded_list(size), gzipped
    url = f"http://127.0.0.1:{server.server_address[1]}"
    options = {"host": url, "api_key": "token-not-shown"}
    if size <= LIMIT:
        assert list_cluster_objects(options, max_response_bytes=LIMIT)["runtimeclasses"] == []
        return
    with pytest.raises(KubeAccessError) as raised:
        list_cluster_objects(options, max_response_bytes=LIMIT)
    assert str(raised.value) == (f"listing RuntimeClasses (node.k8s.io/v1) from {url} failed: the answer is larger than "
                                 f"{LIMIT} bytes once decoded (max_response_bytes): no API server sends that for this "
                                 "list; a hostile or broken server, or a proxy in the way")


@pytest.mark.parametrize("body,problem", [
    ('{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClassList", "metadata": {}, "items": [], "items": []}',
     'the key "items" is given twice in one object'),
    ('{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClassList", "metadata": {"x": NaN}, "items": []}',
     "NaN is not a JSON value"),
])
def test_api_json_follows_the_file_reader_s_rule(server, body, problem):
    # Issue 22 item 10: the API reader took a key given twice (last wins) and NaN, which the file reader refuses.
    Answers.body, Answers.gzipped = body.encode(), False
    url = f"http://127.0.0.1:{server.server_address[1]}"
    with pytest.raises(KubeAccessError) as raised:
        list_cluster_objects({"host": url, "api_key": "t"})
    assert str(raised.value) == (f"listing RuntimeClasses (node.k8s.io/v1) from {url} failed: the answer is not JSON "
                                 f"(is this a Kubernetes API server?): {problem}")


def test_a_negative_overhead_is_refused_as_the_api_server_would(server):
    Answers.body, Answers.gzipped = json.dumps(dict(EMPTY_LIST, items=[
        {"metadata": {"name": "nvidia"}, "handler": "nvidia", "overhead": {"podFixed": {"cpu": "-250m"}}}])).encode(), False
    url = f"http://127.0.0.1:{server.server_address[1]}"
    with pytest.raises(Exception) as raised:
        list_cluster_objects({"host": url, "api_key": "t"})
    assert str(raised.value) == (f"the API server {url}: RuntimeClass 'nvidia': overhead.podFixed 'cpu' is '-250m', "
                                 "negative; the API server refuses that (must be greater than or equal to 0)")
