"""_k8s/inflight.py: the connection a request thread uses is known, and cutting it ends the thread's blocked read,
before the headers (where urllib3 has no response to shut) as after them. A real loopback socket that never answers."""
import socket
import threading

import urllib3

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.inflight import cut, forget, watch_connections


def silent_server():
    """A listening socket that accepts and then says nothing (the accepted sockets are kept open)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    accepted = []

    def accept():
        try:
            while True:
                accepted.append(server.accept()[0])
        except OSError:
            return

    threading.Thread(target=accept, daemon=True).start()
    return server, accepted


def test_a_read_waiting_for_headers_ends_when_its_connection_is_cut():
    server, accepted = silent_server()
    manager = urllib3.PoolManager(retries=False)
    watch_connections(manager)
    outcome = {}

    def fetch():
        try:
            manager.request("GET", f"http://127.0.0.1:{server.getsockname()[1]}/", timeout=urllib3.Timeout(connect=5, read=600))
        except Exception as error:  # noqa: BLE001 - whatever the read raises is the outcome
            outcome["error"] = error
        finally:
            forget()

    worker = threading.Thread(target=fetch, daemon=True)
    worker.start()
    try:
        # Until the request is sent there is nothing to cut; the server then holds it for ever (read timeout 600 s).
        for _attempt in range(600):  # bounded: a broken cut fails the test instead of hanging it
            if accepted and cut(worker):
                break
            worker.join(0.05)
        worker.join(30)
        assert not worker.is_alive()
        assert isinstance(outcome.get("error"), urllib3.exceptions.HTTPError), outcome
        assert cut(worker) is False  # finished: nothing left to cut
    finally:
        server.close()
        for connection in accepted:
            connection.close()
