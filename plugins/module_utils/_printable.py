# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Text a hostile name cannot write with: the one escaping every output uses (CLI, console callback, JUnit, HTML,
metrics, report.json).

The name checks where cluster data enters (``_k8s/objects``) refuse most of it; these make each output safe on its own,
whatever reached it (a node's file names, a daemon's message, a slice report). A control character (C0, DEL, C1), a
line or paragraph separator, a bidirectional override, or a non-character (U+FFFE, U+FFFF, a lone surrogate) is
written as a visible escape (``\\x1b``, ``\\u2028``): no terminal sequence, no forged line, no XML that does not parse.
Standard library only, Python 3.8 syntax (node-side code may use it).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# C0 and C1 controls, DEL, line/paragraph separators, bidi embeddings/overrides/isolates, non-characters, surrogates.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufdd0-\ufdef\ufffe\uffff\ud800-\udfff]")
_UNSAFE_KEEPING_LINES = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufdd0-\ufdef"
                                   "\ufffe\uffff\ud800-\udfff]")


def _escape(match):
    code = ord(match.group(0))
    return "\\x%02x" % code if code < 0x100 else "\\u%04x" % code


def printable(text):
    """``text`` on one line, every unsafe character escaped (a newline too)."""
    return _UNSAFE.sub(_escape, str(text))


def printable_lines(text):
    """``text`` with its newlines kept as line breaks and every other unsafe character escaped."""
    return _UNSAFE_KEEPING_LINES.sub(_escape, str(text))
