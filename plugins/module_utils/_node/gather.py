# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Node primitives: run a command, find a program, read a text file, map node paths under ``host_root``.

Runs on nodes: standard library only, Python 3.8 syntax. No judgement here (docs/daemon-view.md).

``host_root`` is the directory where the node's filesystem is visible (``/`` on the node itself, ``/host`` in a
container with the host mounted, or a copied tree). Every path in the evidence is a *node* path; only the
lookups happen under ``host_root``, where a symbolic link with an absolute target is followed inside
``host_root`` (as ``chroot`` would), never out into the machine running this code.
"""

from __future__ import absolute_import, division, print_function

import os
import selectors
import shutil
import signal
import stat
import subprocess
import time

__metaclass__ = type

# A config file's text is shipped whole up to this size; a real one is a few kilobytes.
MAX_CONFIG_TEXT_BYTES = 1024 * 1024

# Linux gives up after 40 symbolic links in one lookup (ELOOP); so does host_path.
MAX_SYMLINK_HOPS = 40

PSEUDO_FILE_SYSTEMS = ("/proc/", "/sys/", "/dev/")

SYMLINK_LOOP = "more-than-%d-symbolic-links-" % MAX_SYMLINK_HOPS + "-" * 230


def find_executable(name):
    """The path of an executable: ``name`` itself when it contains a ``/``, else looked up in ``PATH``; or None."""
    if os.sep in name:
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    return shutil.which(name)


# What one command may print on stdout before it is killed, unless its caller says otherwise (a containerd config dump
# is a few kilobytes); stderr is kept up to its own cap, the rest read and dropped.
DEFAULT_OUTPUT_CAP = 50 * 1024 * 1024
STDERR_CAP = 64 * 1024
_READ_CHUNK = 65536


def deadline_in(seconds):
    """The monotonic time ``seconds`` from now: one deadline shared by every command of a node task."""
    return time.monotonic() + seconds


def run_command(argv, timeout, env=None, max_bytes=DEFAULT_OUTPUT_CAP, deadline=None):
    """``(rc, stdout bytes, stderr text, error sentence)``; rc is None when the command did not run to the end.

    Runs from ``/``, the daemon's working directory under systemd: containerd 1.6.0-1.6.28 and 1.7.0-1.7.15 glob a
    relative ``imports`` pattern from the working directory, so a dump then resolves it as the daemon does.
    Bounded in time (``deadline``, else ``timeout`` seconds from now) and in memory (``max_bytes`` of stdout).
    """
    return finish_command(start_command(argv, env), argv, timeout, max_bytes=max_bytes, deadline=deadline)


def start_command(argv, env=None):
    """A started ``argv`` (a ``Popen``), or the sentence saying why it could not start; ``finish_command`` ends it.

    Lets two commands run at once: ``containerd --version`` beside ``config dump`` costs the node no extra wall time.
    Each command leads its own process group (a new session), so whatever it leaves behind (a wrapper's grandchild
    holding stdout) is killed with it.
    """
    try:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd="/",
                                env=env, start_new_session=True)
    except OSError as error:
        return "`%s` could not be started: %s" % (" ".join(argv), error.strerror or error)


def finish_command(process, argv, timeout, max_bytes=DEFAULT_OUTPUT_CAP, deadline=None):
    """``run_command``'s answer for a ``start_command`` result.

    stdout is read as it comes with the cap enforced while reading: past ``max_bytes`` the process group is killed and
    the command fails (a binary printing for ever costs at most the cap). When the command exits, its group is killed
    too (nothing it started may hold the pipes open), and what is already in the pipes is read. Past the deadline the
    group is killed and the command fails. Never waits without a deadline.
    """
    if not isinstance(process, subprocess.Popen):
        return None, b"", "", process
    deadline = deadline if deadline is not None else deadline_in(timeout)
    command = " ".join(argv)
    chunks, errors, sizes = [], [], {"out": 0, "err": 0}
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ, "out")
    selector.register(process.stderr, selectors.EVENT_READ, "err")
    failure = None
    exited = False
    try:
        while selector.get_map():
            if not exited and _has_exited(process):
                exited = True
                _kill_group(process)  # a grandchild left holding stdout must not keep us waiting
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                failure = "`%s` did not finish within %d seconds" % (command, max(1, round(timeout)))
                break
            for key, _events in selector.select(timeout=min(remaining, 0.2)):
                data = os.read(key.fileobj.fileno(), _READ_CHUNK)
                if not data:
                    selector.unregister(key.fileobj)
                    continue
                sizes[key.data] += len(data)
                if key.data == "out":
                    chunks.append(data)
                    if sizes["out"] > max_bytes:
                        failure = "`%s` printed more than %d bytes, the limit: killed" % (command, max_bytes)
                        break
                elif sizes["err"] - len(data) < STDERR_CAP:
                    errors.append(data)
            if failure:
                break
    finally:
        selector.close()
        _kill_group(process)
        process.stdout.close()
        process.stderr.close()
        _reap(process, deadline)
    if failure:
        return None, b"", "", failure
    stderr = b"".join(errors)[:STDERR_CAP].decode("utf-8", "replace").strip()
    return process.returncode, b"".join(chunks), stderr, None


def _has_exited(process):
    """True when the process has ended, without reaping it (its pid, hence its group id, stays ours to kill)."""
    try:
        return os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _kill_group(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _reap(process, deadline):
    try:
        process.wait(timeout=max(1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


def is_node_root(host_root):
    """True when the node's filesystem is this machine's own (no mapping needed)."""
    return not host_root or os.path.normpath(host_root) == "/"


def host_path(host_root, node_path):
    """Where ``node_path`` (a path on the node) lies on this machine, with ``host_root`` as the node's ``/``.

    Symbolic links met on the way are resolved inside ``host_root``: an absolute target restarts at
    ``host_root``, and ``..`` never climbs above it. The path need not exist.
    """
    if is_node_root(host_root):
        return node_path
    root = os.path.abspath(host_root)
    pending = [part for part in node_path.split("/") if part]
    resolved = []
    hops = 0
    while pending:
        part = pending.pop(0)
        if part == ".":
            continue
        if part == "..":
            if resolved:
                resolved.pop()
            continue
        candidate = os.path.join(root, *(resolved + [part]))
        try:
            target = os.readlink(candidate)
        except OSError:  # not a link, or absent: taken as written
            resolved.append(part)
            continue
        hops += 1
        if hops > MAX_SYMLINK_HOPS:
            # Fail closed: the link itself would be followed by this machine, out of host_root. A name longer than any
            # file system allows makes every later stat, open and listing fail (ENAMETOOLONG), and says why.
            return os.path.join(root, SYMLINK_LOOP)
        if target.startswith("/"):
            resolved = []
        pending = [piece for piece in target.split("/") if piece] + pending
    return os.path.join(root, *resolved)


def node_path_of(host_root, path):
    """The node path of ``path`` on this machine (inverse of ``host_path`` for paths under ``host_root``)."""
    if is_node_root(host_root) or not path:
        return path
    root = os.path.abspath(host_root)
    if path == root:
        return "/"
    if path.startswith(root + "/"):
        return path[len(root):]
    return path


def read_text_file(path, limit=MAX_CONFIG_TEXT_BYTES):
    """``{"text", "size", "mtime", "error"}`` for one file; text is None with an error sentence when unreadable."""
    entry = {"text": None, "size": None, "mtime": None, "error": None}
    if SYMLINK_LOOP in path:
        entry["error"] = "is behind more than %d symbolic links under host_root (a loop): not read" % MAX_SYMLINK_HOPS
        return entry
    try:
        info = os.stat(path)
    except FileNotFoundError:
        entry["error"] = "does not exist"
        return entry
    except OSError as error:
        entry["error"] = "cannot be read: %s" % (error.strerror or error)
        return entry
    entry["size"], entry["mtime"] = info.st_size, info.st_mtime
    if not stat.S_ISREG(info.st_mode):
        entry["error"] = "is not a regular file"
        return entry
    if os.path.realpath(path).startswith(PSEUDO_FILE_SYSTEMS):
        # /proc/<pid>/environ is a "regular file" of size 0 holding another process's secrets: never a config.
        entry["error"] = "lies in /proc, /sys or /dev, which hold no containerd configuration: not read"
        return entry
    if info.st_size > limit:
        entry["error"] = "is %d bytes, larger than the %d byte limit" % (info.st_size, limit)
        return entry
    try:
        with open(path, "rb") as handle:
            raw = handle.read(limit + 1)
    except OSError as error:
        entry["error"] = "cannot be read: %s" % (error.strerror or error)
        return entry
    if info.st_size == 0 and raw:
        entry["error"] = "is a pseudo-file (size 0, yet it yields data), not a containerd configuration: not read"
        return entry
    try:
        entry["text"] = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        entry["error"] = "is not UTF-8 text (byte 0x%02x at offset %d)" % (raw[error.start], error.start)
    return entry
