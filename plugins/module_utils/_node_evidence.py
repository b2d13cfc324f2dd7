# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Raw evidence about the files and binaries behind a node's containerd configuration.

Runs on nodes: standard library only, Python 3.8 syntax. No judgement here: it reads the files the
root config's ``imports`` can reach, expands each pattern the way containerd does, lists directories
and stats binaries, and reports what it saw (errors as sentences). The controller decides what it means.

containerd's import walk (docs/containerd-loading.md §1, ``LoadConfig``/``resolveImports`` @v1.6.20, @v2.2.0): a FIFO
queue starting at the root; each file's own ``imports`` are resolved and queued; a path is applied
once, deduplicated by its exact string; only entries containing ``*`` are globbed (Go
``filepath.Glob``); a relative non-glob entry is joined to the importing file's directory; a relative
glob is joined likewise on 1.6.29+/1.7.16+/2.x but passed unchanged (so resolved from the daemon's
working directory, ``/`` under systemd) on 1.6.0-1.6.28 and 1.7.0-1.7.15.

``host_root`` is the directory where the node's filesystem is visible (``/`` on the node itself, ``/host`` in a
container with the host mounted, or a copied tree). Every path in the evidence is a *node* path; only the
lookups happen under ``host_root``, where a symbolic link with an absolute target is followed inside
``host_root`` (as ``chroot`` would), never out into the machine running this code.
"""

from __future__ import absolute_import, division, print_function

import json
import os
import re
import shutil
import stat
import subprocess

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._goglob import (
    GlobPatternError,
    glob,
    has_meta,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._toml_imports import (
    read_top_level_imports,
)

__metaclass__ = type

# A config file's text is shipped whole up to this size; a real one is a few kilobytes.
MAX_CONFIG_TEXT_BYTES = 1024 * 1024
# containerd never stops walking imports, but a node with more files than this is not a config tree.
MAX_CONFIG_FILES = 200
MAX_LISTING_ENTRIES = 1000
# Drop-in files no import reached whose text is shipped too (containerd's conventional drop-in suffixes).
DROPIN_TEXT_SUFFIXES = (".toml", ".conf")
# The working directory of a containerd started by systemd (WorkingDirectory= defaults to /).
DAEMON_WORKING_DIRECTORY = "/"
# The PATH containerd's systemd unit gives the daemon and its shims (containerd.service @v1.6.20): where a bare
# BinaryName or shim name is searched under a host_root other than `/`.
NODE_PATH_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
# Linux gives up after 40 symbolic links in one lookup (ELOOP); so does host_path.
MAX_SYMLINK_HOPS = 40
PSEUDO_FILE_SYSTEMS = ("/proc/", "/sys/", "/dev/")
SYMLINK_LOOP = "more-than-%d-symbolic-links-" % MAX_SYMLINK_HOPS + "-" * 230

# What to stat is chosen by a regex over the dump's lines (and the daemon's JSON), not a TOML parse:
# the node has no tomllib. It only picks candidates; the controller decides which runtime uses which.
_BINARY_NAME_IN_TOML = re.compile(r"""^[ \t]*BinaryName[ \t]*=[ \t]*(?:"([^"\n]*)"|'([^'\n]*)')""", re.MULTILINE)
_RUNTIME_TYPE_IN_TOML = re.compile(r"""^[ \t]*runtime_type[ \t]*=[ \t]*(?:"([^"\n]*)"|'([^'\n]*)')""", re.MULTILINE)
_BINARY_NAME_IN_JSON = re.compile(r'"BinaryName"\s*:\s*"((?:[^"\\]|\\.)*)"')
_RUNTIME_TYPE_IN_JSON = re.compile(r'"runtimeType"\s*:\s*"((?:[^"\\]|\\.)*)"')
_JSON_PATTERNS = (_BINARY_NAME_IN_JSON, _RUNTIME_TYPE_IN_JSON)


_VERSION_IN_OUTPUT = re.compile(r"\bv?(\d+\.\d+\.\d+)")


def parse_containerd_version(version_output):
    """``containerd --version`` output → ``"1.6.20"``/``"2.2.0"``, or None when it names no version.

    Seen forms: ``containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3`` (Debian),
    ``containerd containerd.io 1.7.27 05044ec0…`` (Docker's package),
    ``containerd github.com/containerd/containerd/v2 v2.2.0 …`` (upstream 2.x).
    """
    if not version_output:
        return None
    for word in version_output.split()[1:]:
        match = _VERSION_IN_OUTPUT.match(word)
        if match:
            return match.group(1)
    return None


def parse_version(text):
    """``"1.6.20"`` → ``(1, 6, 20)``; None when unknown or unreadable."""
    if not isinstance(text, str):
        return None
    try:
        parts = tuple(int(part) for part in text.split("-")[0].split("+")[0].split("~")[0].split(".")[:3])
    except ValueError:
        return None
    return parts if len(parts) == 3 else None


def between(version, low, high):
    return version is not None and low <= version <= high


def relative_globs_from_cwd(version):
    """Whether this containerd (a version tuple) resolves relative ``imports`` globs from its working directory.

    Relative globs were passed to filepath.Glob unchanged until PR #9746 and its backports #9835
    (1.6.29) and #9834 (1.7.16) (docs/containerd-loading.md §1).
    """
    return between(version, (1, 6, 0), (1, 6, 28)) or between(version, (1, 7, 0), (1, 7, 15))


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


def _escape_glob(text):
    """``text`` with Go's magic characters escaped, so it matches only itself inside a pattern."""
    return re.sub(r"([*?\[\\])", r"\\\1", text)


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


def _join_to_importer(importer, entry):
    return os.path.normpath(os.path.join(os.path.dirname(importer), entry))


def _expand(pattern, host_root="/"):
    """Go ``filepath.Glob`` of a node pattern under ``host_root``: (node-path matches, error sentence or None).

    The pattern's leading directories without magic characters are mapped with ``host_path`` (so links in
    them stay inside ``host_root``) and escaped; the rest is globbed there, and each match is reported
    with those leading directories as written.
    """
    try:
        if is_node_root(host_root):
            return glob(pattern), None
        prefix = non_magic_directory(pattern)
        if not os.path.isabs(prefix):  # a relative pattern: containerd globs it from its working directory
            prefix, pattern = DAEMON_WORKING_DIRECTORY, os.path.join(DAEMON_WORKING_DIRECTORY, pattern)
        rest = pattern[len(prefix):].lstrip("/")
        real_prefix = host_path(host_root, prefix)
        matches = glob(os.path.join(_escape_glob(real_prefix), rest))
        node_matches = [os.path.normpath(os.path.join(prefix, match[len(real_prefix):].lstrip("/"))) for match in matches]
        # The glob walks this machine's file system: a directory link with an absolute target leads it out of host_root.
        # Only a match that exists with every component resolved inside host_root is the node's.
        return [match for match in node_matches if os.path.lexists(host_path(host_root, match))], None
    except GlobPatternError as error:
        return [], str(error)


def walk_imports(root_path, host_root="/"):
    """``(config_files, import_globs)``: every file reachable from the root, in containerd's order.

    ``root_path`` and every reported path are node paths; files are read under ``host_root``.
    """
    config_files = []
    import_globs = []
    queued = [(root_path, "root", None, None)]
    seen = {root_path}
    while queued and len(config_files) < MAX_CONFIG_FILES:
        path, role, imported_by, pattern = queued.pop(0)
        entry = {"path": path, "role": role, "imported_by": imported_by, "pattern": pattern}
        entry.update(read_text_file(host_path(host_root, path)))
        entry["imports"], entry["imports_error"] = (
            read_top_level_imports(entry["text"]) if entry["text"] is not None else (None, None))
        config_files.append(entry)
        for declared in entry["imports"] or []:
            expansion = expand_import(declared, path, host_root)
            import_globs.append(expansion)
            for match in expansion["matches"]:
                if match not in seen:
                    seen.add(match)
                    queued.append((match, "import", path, declared))
    if queued:
        config_files.append({"path": None, "role": "import", "imported_by": None, "pattern": None, "text": None,
                             "size": None, "mtime": None, "imports": None, "imports_error": None,
                             "error": "more than %d files are reachable through imports; the rest were not read"
                                      % MAX_CONFIG_FILES})
    return config_files, import_globs


def expand_import(declared, importer, host_root="/"):
    """One ``imports`` entry as containerd resolves it, plus what 1.6.0-1.6.28/1.7.0-1.7.15 would load."""
    absolute = os.path.isabs(declared)
    globbed = "*" in declared  # containerd globs only entries containing '*' (resolveImports)
    resolved = declared if absolute else _join_to_importer(importer, declared)
    expansion = {"pattern": declared, "declared_in": importer, "absolute": absolute, "glob": globbed,
                 "resolved_pattern": resolved, "matches": [], "matches_from_cwd": None,
                 "cwd": None, "error": None}
    if globbed:
        expansion["matches"], expansion["error"] = _expand(resolved, host_root)
        if not absolute:
            expansion["cwd"] = DAEMON_WORKING_DIRECTORY
            cwd_pattern = os.path.join(DAEMON_WORKING_DIRECTORY, declared)
            expansion["matches_from_cwd"] = _expand(cwd_pattern, host_root)[0]
    else:
        # A literal entry is applied as written (even with ? or [ in it); a missing one stops containerd.
        expansion["matches"] = [os.path.normpath(resolved)]
    return expansion


def import_matches(declared, importer, version, host_root="/"):
    """``(matches, error)``: the files one ``imports`` entry of ``importer`` loads on containerd ``version`` (a tuple).

    A relative glob resolves from the daemon's working directory on 1.6.0-1.6.28/1.7.0-1.7.15, from the importer's
    directory otherwise (also when the version is unknown); a literal entry counts only when it exists.
    """
    expansion = expand_import(declared, importer, host_root)
    if not expansion["glob"]:
        return [path for path in expansion["matches"] if os.path.lexists(host_path(host_root, path))], None
    if expansion["matches_from_cwd"] is not None and relative_globs_from_cwd(version):
        return expansion["matches_from_cwd"], expansion["error"]
    return expansion["matches"], expansion["error"]


def non_magic_directory(pattern):
    """The leading directories of ``pattern`` without glob metacharacters ("/etc/containerd/conf.d")."""
    parts = pattern.split("/")
    kept = []
    for part in parts[:-1]:
        if has_meta(part):
            break
        kept.append(part)
    directory = "/".join(kept)
    if pattern.startswith("/") and not directory:
        return "/"
    return directory or "."


def list_directory(path, host_root="/"):
    """``{"path", "exists", "error", "entries": [{name,size,mtime,is_file}], "truncated"}``, sorted by name.

    ``path`` is a node path, listed under ``host_root``; entries that are links are stat'ed inside it.
    """
    listing = {"path": path, "exists": False, "error": None, "entries": [], "truncated": False}
    real_path = host_path(host_root, path)
    try:
        names = sorted(os.listdir(real_path))
    except FileNotFoundError:
        return listing
    except NotADirectoryError:
        listing.update(exists=True, error="is not a directory")
        return listing
    except OSError as error:
        listing.update(exists=True, error="cannot be listed: %s" % (error.strerror or error))
        return listing
    listing["exists"] = True
    listing["truncated"] = len(names) > MAX_LISTING_ENTRIES
    for name in names[:MAX_LISTING_ENTRIES]:
        try:
            info = os.stat(host_path(host_root, os.path.join(path, name)))
        except OSError:  # a dangling symlink: containerd could not read it either
            listing["entries"].append({"name": name, "size": None, "mtime": None, "is_file": False})
            continue
        listing["entries"].append({"name": name, "size": info.st_size, "mtime": info.st_mtime,
                                   "is_file": stat.S_ISREG(info.st_mode)})
    return listing


def dropin_listings(import_globs, dropin_dirs, host_root="/", reached=()):
    """Listings of each glob's non-magic directory and of the configured drop-in directories, once each.

    Each regular ``*.toml``/``*.conf`` entry whose node path is not in ``reached`` (the files the import walk
    read) also carries its ``text`` and ``text_error`` (``read_text_file``, the config files' size limit), at most
    ``MAX_CONFIG_FILES`` in all: the controller links a missing handler to the unloaded file that defines it.
    Each listing says so with ``texts_for`` (the suffixes whose text it carries).
    """
    sources = {}
    for expansion in import_globs:
        if expansion["glob"]:
            directory = non_magic_directory(expansion["resolved_pattern"])
            sources.setdefault(directory, []).append("import " + expansion["pattern"])
    for directory in dropin_dirs:
        sources.setdefault(os.path.normpath(directory), []).append("option dropin_dirs")
    listings = []
    texts_read = 0
    for directory, why in sources.items():
        listing = list_directory(directory, host_root)
        listing["listed_because"] = why
        listing["texts_for"] = list(DROPIN_TEXT_SUFFIXES)
        for entry in listing["entries"]:
            path = os.path.join(directory, entry["name"])
            if not entry["is_file"] or not entry["name"].endswith(DROPIN_TEXT_SUFFIXES) or path in reached:
                continue
            if texts_read < MAX_CONFIG_FILES:
                texts_read += 1
                read = read_text_file(host_path(host_root, path))
                entry["text"], entry["text_error"] = read["text"], read["error"]
            else:
                entry["text"], entry["text_error"] = None, "not read: more than %d unloaded drop-in files" % MAX_CONFIG_FILES
        listings.append(listing)
    return listings


def shim_binary_name(runtime_type):
    """containerd's shim binary for a runtime type: io.containerd.runc.v2 -> containerd-shim-runc-v2.

    ``BinaryName`` in runtime/v2/shim/util.go (@v1.6.20): the last two dot-separated parts; an absolute
    path (2.x) is used as is; fewer than two parts names no shim.
    """
    if os.path.isabs(runtime_type):
        return runtime_type
    parts = runtime_type.split(".")
    if len(parts) < 2 or not all(parts[-2:]):
        return None
    return "containerd-shim-%s-%s" % (parts[-2], parts[-1])


def _resolve(name, containerd_dir, host_root="/"):
    """This machine's path of the binary the node would run for ``name``, or None."""
    if not is_node_root(host_root):
        # containerd's own binary is not the node's here, so only the node's standard PATH is searched.
        candidates = [name] if os.path.isabs(name) else [os.path.join(directory, name) for directory in NODE_PATH_DIRS]
        for candidate in candidates:
            real = host_path(host_root, candidate)
            if os.path.isfile(real) and (os.path.isabs(name) or os.access(real, os.X_OK)):
                return real
        return host_path(host_root, name) if os.path.isabs(name) and os.path.lexists(host_path(host_root, name)) else None
    if os.path.isabs(name):
        return name if os.path.lexists(name) else None
    found = shutil.which(name)
    if found:
        return found
    # containerd also runs a shim lying beside its own binary (shim.Command, runtime/v2/shim/util.go).
    if containerd_dir:
        beside = os.path.join(containerd_dir, name)
        if os.path.lexists(beside):
            return beside
    return None


def stat_binary(name, kind, containerd_dir=None, host_root="/"):
    """``{kind, exists, executable, resolved (a node path), runtime_types}`` of one binary name."""
    resolved = _resolve(name, containerd_dir, host_root)
    exists = bool(resolved) and os.path.isfile(resolved)
    if resolved and not is_node_root(host_root):
        real = node_path_of(host_root, resolved)
    else:
        real = os.path.realpath(resolved) if resolved else None
    return {"kind": kind, "exists": exists, "executable": exists and os.access(resolved, os.X_OK),
            "resolved": real, "runtime_types": []}


def _matched_values(pattern, text):
    values = []
    for found in pattern.finditer(text or ""):
        value = next(group for group in found.groups() if group is not None)
        if pattern in _JSON_PATTERNS:
            try:
                value = json.loads('"%s"' % value)
            except ValueError:
                continue
        if value and value not in values:
            values.append(value)
    return values


def runtime_binaries(dump_text, daemon_text, containerd_bin, host_root="/"):
    """Stat of every ``BinaryName`` and implied shim found in the dump and the daemon's JSON, under ``host_root``.

    Keyed by the name as written. ``runc`` is included whenever a runc.v2 runtime appears: a runc
    runtime without ``BinaryName`` runs ``runc`` from the shim's PATH.
    """
    binary_names = _matched_values(_BINARY_NAME_IN_TOML, dump_text) + _matched_values(_BINARY_NAME_IN_JSON, daemon_text)
    runtime_types = _matched_values(_RUNTIME_TYPE_IN_TOML, dump_text) + _matched_values(_RUNTIME_TYPE_IN_JSON, daemon_text)
    containerd_path = _resolve(containerd_bin, None) if containerd_bin and is_node_root(host_root) else None
    containerd_dir = os.path.dirname(os.path.realpath(containerd_path)) if containerd_path else None
    binaries = {}
    for name in binary_names:
        binaries.setdefault(name, stat_binary(name, "BinaryName", containerd_dir, host_root))
    for runtime_type in runtime_types:
        shim = shim_binary_name(runtime_type)
        if shim:
            binaries.setdefault(shim, stat_binary(shim, "shim", containerd_dir, host_root))
            if runtime_type not in binaries[shim]["runtime_types"]:
                binaries[shim]["runtime_types"].append(runtime_type)
        if runtime_type == "io.containerd.runc.v2":
            binaries.setdefault("runc", stat_binary("runc", "default_runc", containerd_dir, host_root))
    return binaries
