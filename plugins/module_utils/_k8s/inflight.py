# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The connection each API request thread is using, so that a request given up on at its deadline is cut at once.

Controller side. ``request_timeout`` bounds each socket read only: a server that dribbles its headers or its body a
byte at a time keeps a read going for ever. ``_k8s/session.py`` runs each request in a thread of its own and stops
waiting at the deadline; ``cut`` then shuts that thread's socket, whatever the phase (headers or body), so the read
fails at once and the thread ends: nothing is left behind to wake at interpreter shutdown (exit 134) or hold a
connection. ``watch_connections`` makes every pool of one client's pool manager use connections that note the thread
using them.
"""

import socket
import threading

_IN_USE = {}  # thread ident -> the urllib3 connection that thread is sending on or reading from
_LOCK = threading.Lock()
_WATCHED_CLASSES = {}


def watch_connections(pool_manager):
    """Every connection pool ``pool_manager`` creates from now on uses connections that note their thread."""
    new_pool = pool_manager._new_pool  # pylint: disable=protected-access  # the one hook all urllib3 managers share

    def watched_pool(*args, **kwargs):
        pool = new_pool(*args, **kwargs)
        pool.ConnectionCls = _watched_class(pool.ConnectionCls)
        return pool

    pool_manager._new_pool = watched_pool  # pylint: disable=protected-access


def cut(thread):
    """Shut the socket ``thread`` is using (both directions): its blocked read or write fails at once.

    True when there was a socket to shut; false while the thread is still connecting (``request_timeout`` bounds a
    connect attempt) or has finished."""
    with _LOCK:
        connection = _IN_USE.get(thread.ident)
    sock = getattr(connection, "sock", None)
    if sock is None:
        return False
    try:
        # The plain socket's shutdown, also under TLS: the TLS layer's own would drop its state under the reader.
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except (OSError, TypeError, ValueError):
        return False
    return True


def forget():
    """The calling thread uses no connection any more."""
    with _LOCK:
        _IN_USE.pop(threading.get_ident(), None)


def _note(connection):
    with _LOCK:
        _IN_USE[threading.get_ident()] = connection


def _watched_class(connection_class):
    if connection_class in _WATCHED_CLASSES.values():
        return connection_class
    if connection_class not in _WATCHED_CLASSES:
        def request(self, *args, **kwargs):
            _note(self)
            return connection_class.request(self, *args, **kwargs)

        def getresponse(self, *args, **kwargs):
            _note(self)
            return connection_class.getresponse(self, *args, **kwargs)

        _WATCHED_CLASSES[connection_class] = type(connection_class.__name__, (connection_class,),
                                                  {"request": request, "getresponse": getresponse})
    return _WATCHED_CLASSES[connection_class]
