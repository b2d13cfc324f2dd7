# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""containerd releases: reading the version a node reports, and the release ranges whose behaviour differs.

Used on nodes (the import walk resolves relative globs by release) and on the controller (the rules): standard
library only, Python 3.8 syntax. One place for the version rules, so controller code does not import node gathering.
"""

from __future__ import absolute_import, division, print_function

import re

__metaclass__ = type

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
