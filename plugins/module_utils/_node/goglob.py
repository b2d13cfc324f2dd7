# Copyright: gpufleet platform team
# Apache License 2.0 (see LICENSE)
"""Go's ``path/filepath`` ``Match`` and ``Glob``, which containerd uses to expand ``imports``.

Runs on nodes: standard library only, Python 3.8 syntax.  The semantics follow Go on Unix exactly
(``filepath.Match`` / ``filepath.Glob``, https://pkg.go.dev/path/filepath#Match):

- ``*`` matches any run of characters except ``/``; ``?`` one character except ``/``;
  ``[...]`` a class (``^`` negates, ``a-z`` ranges, ``\\`` escapes); ``\\x`` matches ``x``.
- No ``**``, no brace expansion, and hidden files are not special (``*`` matches ``.hidden``).
- ``Glob`` lists each directory sorted by name, ignores I/O errors (an unreadable or missing directory
  matches nothing), and returns a pattern without magic characters only if it ``lstat``\\s.
- A malformed pattern raises ``GlobPatternError`` (Go's ``ErrBadPattern``).

Bounded, unlike Go: a pattern of many ``*`` levels over directories that link to themselves expands exponentially
(``*/*/*/*/*/*/*/*/*.toml`` with 8 self-links: past 120 s and 2.4 GB). Every path the walk produces, at any level, counts
against ``MAX_GLOB_PATHS``, and a directory met again below itself (the same device and inode: a link loop) stops the
walk; either raises ``GlobLimitError``, so the caller fails closed instead of answering late or partly.
"""

from __future__ import absolute_import, division, print_function

import os
import stat

__metaclass__ = type

SEPARATOR = "/"
_MAGIC = "*?[\\"


class GlobPatternError(ValueError):
    """The pattern is malformed (Go: ``filepath.ErrBadPattern``)."""

    def __init__(self, pattern):
        super(GlobPatternError, self).__init__("syntax error in pattern %r" % (pattern,))
        self.pattern = pattern


def has_meta(pattern):
    """True when ``pattern`` contains a character Go treats as magic (``* ? [ \\``)."""
    return any(char in pattern for char in _MAGIC)


def match(pattern, name):
    """Go ``filepath.Match(pattern, name)``."""
    try:
        return _match(pattern, name)
    except _BadPattern:
        raise GlobPatternError(pattern)


def glob(pattern, cwd=None, max_paths=None):
    """Go ``filepath.Glob(pattern)``, bounded (``GlobLimitError``).

    ``cwd`` is the working directory a relative pattern is resolved against (default: this process's);
    matches of a relative pattern are returned relative, as Go returns them.
    """
    return _glob(pattern, cwd, _Budget(pattern, MAX_GLOB_PATHS if max_paths is None else max_paths))


# Paths one Glob may produce at all its levels together; a real imports glob produces a few dozen.
MAX_GLOB_PATHS = 10000


class GlobLimitError(ValueError):
    """The expansion was stopped: too many paths, or a directory loop (see the module docstring)."""


class _Budget(object):
    def __init__(self, pattern, limit):
        self.pattern, self.limit, self.left = pattern, limit, limit

    def spend(self, count):
        self.left -= count
        if self.left < 0:
            raise GlobLimitError("pattern %r expands to more than %d paths (directories linked into themselves?): "
                                 "not expanded" % (self.pattern, self.limit))


class _BadPattern(Exception):
    pass


def _match(pattern, name):
    while pattern:
        star, chunk, pattern = _scan_chunk(pattern)
        if star and not chunk:
            # A trailing * matches the rest of the name unless it has a separator.
            return SEPARATOR not in name
        rest, ok = _match_chunk(chunk, name)
        # The last chunk must use up the name; otherwise the star may still find a longer match.
        if ok and (not rest or pattern):
            name = rest
            continue
        if star:
            matched_after_skip = False
            for index in range(len(name)):
                if name[index] == SEPARATOR:
                    break
                rest, ok = _match_chunk(chunk, name[index + 1:])
                if ok:
                    if not pattern and rest:
                        continue
                    name = rest
                    matched_after_skip = True
                    break
            if matched_after_skip:
                continue
        # Before answering no, make sure the rest of the pattern is well formed.
        while pattern:
            _star, chunk, pattern = _scan_chunk(pattern)
            _match_chunk(chunk, "")
        return False
    return not name


def _scan_chunk(pattern):
    star = False
    while pattern.startswith("*"):
        pattern = pattern[1:]
        star = True
    in_range = False
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            if index + 1 < len(pattern):
                index += 1
        elif char == "[":
            in_range = True
        elif char == "]":
            in_range = False
        elif char == "*" and not in_range:
            break
        index += 1
    return star, pattern[:index], pattern[index:]


def _match_chunk(chunk, text):
    """Match ``chunk`` at the start of ``text``: (rest, True) or ("", False); raises _BadPattern."""
    failed = False
    while chunk:
        if not failed and not text:
            failed = True
        head = chunk[0]
        if head == "[":
            char = ""
            if not failed:
                char, text = text[0], text[1:]
            chunk = chunk[1:]
            negated = chunk.startswith("^")
            if negated:
                chunk = chunk[1:]
            matched = False
            ranges = 0
            while True:
                if chunk.startswith("]") and ranges > 0:
                    chunk = chunk[1:]
                    break
                low, chunk = _class_char(chunk)
                high = low
                if chunk[0] == "-":
                    high, chunk = _class_char(chunk[1:])
                if not failed and low <= char <= high:
                    matched = True
                ranges += 1
            if matched == negated:
                failed = True
        elif head == "?":
            if not failed:
                if text[0] == SEPARATOR:
                    failed = True
                text = text[1:]
            chunk = chunk[1:]
        else:
            if head == "\\":
                chunk = chunk[1:]
                if not chunk:
                    raise _BadPattern()
            if not failed:
                if chunk[0] != text[0]:
                    failed = True
                text = text[1:]
            chunk = chunk[1:]
    if failed:
        return "", False
    return text, True


def _class_char(chunk):
    """One (possibly escaped) character of a class; the rest of the chunk must not be empty."""
    if not chunk or chunk[0] in "-]":
        raise _BadPattern()
    if chunk[0] == "\\":
        chunk = chunk[1:]
        if not chunk:
            raise _BadPattern()
    char, rest = chunk[0], chunk[1:]
    if not rest:
        raise _BadPattern()
    return char, rest


def _glob(pattern, cwd, budget):
    # Go's globWithLimit checks the pattern at every level: "/x/[/]" is well formed (a class holding '/'),
    # but its directory part "/x/[" is not, so Glob fails even where nothing would match.
    match(pattern, "")
    if not has_meta(pattern):
        try:
            os.lstat(_on_disk(pattern, cwd))
        except (OSError, ValueError):
            return []
        return [pattern]
    directory, file_pattern = _split(pattern)
    directory = _clean_glob_path(directory)
    if not has_meta(directory):
        return _glob_in(directory, file_pattern, cwd, budget)
    if directory == pattern:  # Go: prevent infinite recursion
        raise GlobPatternError(pattern)
    matches = []
    for parent in _glob(directory, cwd, budget):
        matches.extend(_glob_in(parent, file_pattern, cwd, budget))
    return matches


def _glob_in(directory, file_pattern, cwd, budget):
    on_disk = _on_disk(directory, cwd)
    try:
        if not stat.S_ISDIR(os.stat(on_disk).st_mode):
            return []
        names = sorted(os.listdir(on_disk))
    except (OSError, ValueError):
        return []
    _refuse_loop(on_disk, budget)
    found = [_clean(directory + SEPARATOR + name) for name in names if match(file_pattern, name)]
    budget.spend(len(found))
    return found


def _refuse_loop(on_disk, budget):
    """GlobLimitError when ``on_disk`` is, by device and inode, one of the directories above it on its own path."""
    try:
        here = os.stat(on_disk)
        parent = os.path.dirname(os.path.normpath(os.path.abspath(on_disk)))
        while True:
            above = os.stat(parent)
            if (above.st_dev, above.st_ino) == (here.st_dev, here.st_ino):
                raise GlobLimitError("pattern %r walks a directory loop (%s is %s, through a symbolic link): not expanded"
                                     % (budget.pattern, on_disk, parent))
            if parent == "/":
                return
            parent = os.path.dirname(parent)
    except OSError:
        return


def _on_disk(path, cwd):
    if cwd is None or path.startswith(SEPARATOR):
        return path
    return os.path.join(cwd, path)


def _split(path):
    index = path.rfind(SEPARATOR)
    return path[:index + 1], path[index + 1:]


def _clean_glob_path(path):
    if path == "":
        return "."
    if path == SEPARATOR:
        return path
    return path[:-1]


def _clean(path):
    """Go ``filepath.Clean`` for the joined paths Glob returns."""
    cleaned = os.path.normpath(path)
    if cleaned.startswith("//"):
        cleaned = SEPARATOR + cleaned.lstrip(SEPARATOR)
    return cleaned
