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
import shutil
import stat
import subprocess

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


def run_command(argv, timeout, env=None):
    """``(rc, stdout bytes, stderr text, error sentence)``; rc is None when the command did not run to the end.

    Runs from ``/``, the daemon's working directory under systemd: containerd 1.6.0-1.6.28 and 1.7.0-1.7.15 glob a
    relative ``imports`` pattern from the working directory, so a dump then resolves it as the daemon does.
    """
    return finish_command(start_command(argv, env), argv, timeout)


def start_command(argv, env=None):
    """A started ``argv`` (a ``Popen``), or the sentence saying why it could not start; ``finish_command`` ends it.

    Lets two commands run at once: ``containerd --version`` beside ``config dump`` costs the node no extra wall time.
    """
    try:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd="/",
                                env=env)
    except OSError as error:
        return "`%s` could not be started: %s" % (" ".join(argv), error.strerror or error)


def finish_command(process, argv, timeout):
    """``run_command``'s answer for a ``start_command`` result."""
    if not isinstance(process, subprocess.Popen):
        return None, b"", "", process
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        return None, b"", "", "`%s` did not finish within %d seconds" % (" ".join(argv), timeout)
    return process.returncode, stdout, stderr.decode("utf-8", "replace").strip(), None


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
