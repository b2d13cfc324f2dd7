# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Registry credentials kept on the node: redacted from config texts, the dump, the daemon's status and messages.

Runs on nodes: standard library only, Python 3.8 syntax (there is no ``tomllib`` here). containerd's registry
credentials (``registry.configs."<host>".auth``: ``password``, ``auth``, ``identitytoken``, ``registrytoken``, and
``token`` as some configs name it) live under ``plugins."io.containerd.grpc.v1.cri".registry...`` on 1.x and
``plugins."io.containerd.cri.v1.images".registry...`` on 2.x. Every value of such a key is replaced, before any text
leaves the node (module results reach ``-v`` output, job events, fact caches and reports; docs/security.md).

The texts are read as TOML, key by key: a key is recognised however it is written (bare, quoted, with escapes such as
``"pass\\u0077ord"``, dotted, in an inline table) and its value is replaced whatever its type (a string keeps its quote
style and line count; an array or a number becomes a string), so the text stays valid TOML with the same lines and
the findings' line numbers still point at the node's file. Free text — comments, and the strings of other keys — has
quoted ``key = "value"`` credentials and the ``user:password@`` of URLs (a mirror endpoint) replaced as well.

containerd's own error messages can quote a value (1.x: ``Can't convert 123456(int64) to string``); every value found
under a credential key is also cut out of the messages shipped with the evidence.
"""

from __future__ import absolute_import, division, print_function

import re

__metaclass__ = type

REDACTED = "<redacted>"
SECRET_KEYS = ("password", "auth", "identitytoken", "registrytoken", "token")
# Tables whose every value is a credential: request headers sent to a registry (``registry.headers`` in the CRI
# config, ``[host."…".header]`` in hosts.toml) carry Authorization, X-Api-Key and the like, named as anyone likes.
HEADER_TABLES = ("headers", "header")
HEADER_VALUE = "header"  # a header's value: each string replaced, the array kept (header values are arrays)
# A value shorter than this is not searched for in messages: it would cut ordinary words apart.
MIN_SCRUBBED_SECRET = 4
NOT_TOML = "is not TOML (line %d is no table, key = value or comment), so it is no containerd configuration: its text is not shipped"

_SECRET_KEY = "(?:%s)" % "|".join(SECRET_KEYS)
_TOML_KEY_PART = r"""(?:[A-Za-z0-9_-]+|"(?:[^"\\\n]|\\.)*"|'[^'\n]*')"""
# In free text (a comment, another key's string): `key = "..."` wherever the key starts a word.
_SECRET_IN_TEXT = re.compile(
    r"""(?P<lead>(?<![A-Za-z0-9_-])(?:%s[ \t]*\.[ \t]*)*)"""
    r"""(?P<key>(?P<quote>["']?)%s(?P=quote))(?P<equals>[ \t]*=[ \t]*)"""
    r'''(?P<value>"(?:[^"\\\n]|\\.)*"|'[^'\n]*')'''
    % (_TOML_KEY_PART, _SECRET_KEY),
    re.IGNORECASE | re.MULTILINE)
_SECRET_IN_JSON = re.compile(r'(?P<key>"%s"\s*:\s*)"(?:[^"\\]|\\.)*"' % _SECRET_KEY, re.IGNORECASE)
# "headers": {...} in the daemon's JSON status: every string in it that is not a key.
_HEADERS_IN_JSON = re.compile(r'(?P<key>"(?:%s)"\s*:\s*)\{(?P<body>[^{}]*)\}' % "|".join(HEADER_TABLES), re.IGNORECASE)
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"(?P<colon>\s*:)?')
# scheme://user:password@host — the userinfo of any URL (registry mirrors take credentials this way).
_URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)[^/\s\"'@?#\\]+@")
# containerd 1.x (BurntSushi/toml via its own decoder): "Can't convert <value>(<Go type>) to <type>".
_CANT_CONVERT = re.compile(r"(Can't convert ).*\(([^()\s]*)\)( to )")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_TABLE_HEADER = re.compile(r"\[\[?[ \t]*%s(?:[ \t]*\.[ \t]*%s)*[ \t]*\]\]?" % (_TOML_KEY_PART, _TOML_KEY_PART))
_BASIC_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_LITERAL_STRING = re.compile(r"'[^'\n]*'")
_ML_BASIC_STRING = re.compile(r'"""(?:[^"\\]|\\[\s\S]|"(?!""))*"""')
_ML_LITERAL_STRING = re.compile(r"'''[\s\S]*?'''")
_SCALAR = re.compile(r"[^,\]}#\n\[{]*")
_SPACE = re.compile(r"[ \t]*")
_SPACE_AND_NEWLINES = re.compile(r"[ \t\r\n]*")
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", "e": "\x1b", '"': '"', "\\": "\\"}


class _Unparsed(Exception):
    """The text is not TOML at this position: the rest of the line is treated as free text."""


def _decode_basic(body):
    """The value of a basic string's body (between the quotes), escapes decoded as TOML decodes them."""
    decoded, index = [], 0
    while index < len(body):
        char = body[index]
        if char != "\\" or index + 1 >= len(body):
            decoded.append(char)
            index += 1
            continue
        code = body[index + 1]
        width = {"u": 4, "U": 8, "x": 2}.get(code)
        if width:
            try:
                decoded.append(chr(int(body[index + 2:index + 2 + width], 16)))
            except ValueError:
                decoded.append(body[index:index + 2 + width])
            index += 2 + width
        else:
            decoded.append(_ESCAPES.get(code, code))
            index += 2
    return "".join(decoded)


def _free_text(text):
    """A comment or a string's contents with quoted credentials and URL userinfo replaced (quotes kept)."""
    text = _SECRET_IN_TEXT.sub(lambda match: "%s%s%s%s%s%s" % (
        match.group("lead"), match.group("key"), match.group("equals"), match.group("value")[0], REDACTED,
        match.group("value")[0]), text)
    return _URL_USERINFO.sub(lambda match: match.group("scheme") + REDACTED + "@", text)


class _Redactor:
    """One pass over a TOML text, copying it with every credential value replaced; ``secrets`` collects them."""

    def __init__(self, text):
        self.text = text
        self.out = []
        self.secrets = []
        self.first_unparsed_line = None
        self.in_header_table = False

    def run(self):
        text, pos = self.text, 0
        while pos < len(text):
            try:
                pos = self._line(pos)
            except _Unparsed as unparsed:
                # Not TOML from here to the line's end: shipped as free text, with credentials still replaced.
                start = unparsed.args[0]
                if self.first_unparsed_line is None:
                    self.first_unparsed_line = text.count("\n", 0, start) + 1
                end = text.find("\n", start)
                end = len(text) if end < 0 else end
                self.out.append(_free_text(text[start:end]))
                pos = end
        return "".join(self.out)

    def _copy(self, start, end):
        self.out.append(self.text[start:end])
        return end

    def _blank(self, pos):
        """Copy white space, line ends and comments, whose text is redacted as free text."""
        text = self.text
        while True:
            pos = self._copy(pos, _SPACE_AND_NEWLINES.match(text, pos).end())
            if not text.startswith("#", pos):
                return pos
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            self.out.append(_free_text(text[pos:end]))
            pos = end

    def _line(self, pos):
        text = self.text
        pos = self._blank(pos)
        if pos >= len(text):
            return pos
        if text[pos] == "[":
            header = _TABLE_HEADER.match(text, pos)
            if not header:
                raise _Unparsed(pos)
            parts = re.findall(_TOML_KEY_PART, header.group())
            last = parts[-1] if parts else ""
            last = _decode_basic(last[1:-1]) if last.startswith('"') else last.strip("'")
            self.in_header_table = last.lower() in HEADER_TABLES
            return self._copy(pos, header.end())  # a comment after the header is read as the next line's
        return self._key_value(pos)

    def _key_value(self, pos):
        """``key = value`` at ``pos``; the value is replaced when the key's last part names a credential."""
        text = self.text
        start, parts = pos, []
        while True:
            pos = _SPACE.match(text, pos).end()
            for pattern, decode in ((_BARE_KEY, lambda raw: raw), (_BASIC_STRING, lambda raw: _decode_basic(raw[1:-1])),
                                    (_LITERAL_STRING, lambda raw: raw[1:-1])):
                match = pattern.match(text, pos)
                if match:
                    parts.append(decode(match.group()))
                    pos = match.end()
                    break
            else:
                raise _Unparsed(start)
            pos = _SPACE.match(text, pos).end()
            if not text.startswith(".", pos):
                break
            pos += 1
        if not text.startswith("=", pos):
            raise _Unparsed(start)
        pos = _SPACE.match(text, pos + 1).end()
        self._copy(start, pos)
        if self.in_header_table or any(part.lower() in HEADER_TABLES for part in parts[:-1]):
            return self._value(pos, HEADER_VALUE)
        if parts[-1].lower() in HEADER_TABLES:
            return self._header_values(pos)
        return self._value(pos, parts[-1].lower() in SECRET_KEYS)

    def _header_values(self, pos):
        """``headers = { Name = [...] }``: the inline table's values are header values, whatever their keys."""
        if not self.text.startswith("{", pos):
            return self._value(pos, HEADER_VALUE)
        outer, self.in_header_table = self.in_header_table, True
        try:
            return self._inline_table(pos)
        finally:
            self.in_header_table = outer

    def _value(self, pos, secret):
        text = self.text
        for pattern, quote in ((_ML_BASIC_STRING, '"""'), (_ML_LITERAL_STRING, "'''"), (_BASIC_STRING, '"'),
                               (_LITERAL_STRING, "'")):
            match = pattern.match(text, pos)
            if match:
                raw = match.group()
                body = raw[len(quote):-len(quote)]
                if secret:
                    self.secrets.append(_decode_basic(body) if quote.startswith('"') else body)
                    # A multi-line string keeps its line count, so line numbers still point at the file's lines.
                    self.out.append(quote + REDACTED + "\n" * body.count("\n") + quote)
                else:
                    self.out.append(quote + _free_text(body) + quote)
                return match.end()
        if text.startswith("[", pos):
            return self._array(pos, secret)
        if text.startswith("{", pos):
            # An inline table under a credential key (auth = { username = ..., password = ... }): its keys decide.
            return self._inline_table(pos)
        match = _SCALAR.match(text, pos)
        raw = match.group().rstrip(" \t\r")
        if not raw:
            raise _Unparsed(pos)
        if secret:
            self.secrets.append(raw)
            self.out.append('"%s"' % REDACTED)
        else:
            self.out.append(raw)
        return pos + len(raw)

    def _array(self, pos, secret):
        text = self.text
        begin = len(self.out)
        self.out.append("[")
        pos += 1
        while True:
            pos = self._blank(pos)
            if text.startswith("]", pos):
                self.out.append("]")
                pos += 1
                break
            pos = self._value(pos, secret)
            pos = self._blank(pos)
            if text.startswith(",", pos):
                pos = self._copy(pos, pos + 1)
            elif not text.startswith("]", pos):
                raise _Unparsed(pos)
        if secret is True:
            # An array under a credential key is no credential containerd reads, yet it holds one: a string stands in.
            written = "".join(self.out[begin:])
            del self.out[begin:]
            self.out.append('"%s"' % REDACTED if "\n" not in written else '["%s"%s]' % (REDACTED, "\n" * written.count("\n")))
        return pos

    def _inline_table(self, pos):
        text = self.text
        self.out.append("{")
        pos += 1
        while True:
            pos = self._blank(pos)
            if text.startswith("}", pos):
                self.out.append("}")
                return pos + 1
            pos = self._key_value(pos)
            pos = self._blank(pos)
            if text.startswith(",", pos):
                pos = self._copy(pos, pos + 1)
            elif not text.startswith("}", pos):
                raise _Unparsed(pos)


def redact_toml(text):
    """``(text with every credential value replaced, [the values replaced])``; ``text`` a config file or dump."""
    redacted, secrets, _unparsed_line = _redact(text)
    return redacted, secrets


def _redact(text):
    """``(redacted text, credential values, the first line that is not TOML or None)``."""
    if not isinstance(text, str):
        return text, [], None
    redactor = _Redactor(text)
    try:
        redacted = redactor.run()
    except RecursionError:
        # Arrays nested past Python's stack: no containerd config; nothing of it is shipped.
        return "# %s: nested too deeply to be read\n" % REDACTED, [], 1
    return redacted, redactor.secrets, redactor.first_unparsed_line


def redact_toml_secrets(text):
    """``text`` (a config file or dump) with the values of credential keys replaced by ``<redacted>``."""
    return redact_toml(text)[0]


def redact_json_secrets(text):
    """``text`` (the daemon's JSON status, which carries its config) with credential values and URL userinfo redacted."""
    if not isinstance(text, str):
        return text
    text = _SECRET_IN_JSON.sub(lambda match: '%s"%s"' % (match.group("key"), REDACTED), text)
    text = _HEADERS_IN_JSON.sub(lambda match: '%s{%s}' % (
        match.group("key"), _JSON_STRING.sub(_json_value_redacted, match.group("body"))), text)
    return _URL_USERINFO.sub(lambda match: match.group("scheme") + REDACTED + "@", text)


def _json_value_redacted(match):
    """A JSON string in a headers object: kept when it is a key, replaced when it is a value."""
    return match.group() if match.group("colon") else '"%s"' % REDACTED


def redact_message(text, secrets=()):
    """A message (containerd's stderr, an error sentence) with the given values, URL userinfo and the value
    containerd 1.x quotes in a conversion error cut out."""
    if not isinstance(text, str):
        return text
    for secret in sorted(set(secrets), key=len, reverse=True):
        if len(secret) >= MIN_SCRUBBED_SECRET:
            text = text.replace(secret, REDACTED)
    text = _CANT_CONVERT.sub(lambda match: "%s%s(%s)%s" % (match.group(1), REDACTED, match.group(2), match.group(3)), text)
    return _URL_USERINFO.sub(lambda match: match.group("scheme") + REDACTED + "@", text)


def secrets_in(texts):
    """Every credential value in these TOML texts (config files): what a message must not quote."""
    found = []
    for text in texts:
        found.extend(redact_toml(text)[1])
    return found


def redact_evidence(evidence):
    """Redact, in place, every config text, the dump, the daemon's status and every message in the evidence."""
    secrets = []

    def config_text(holder, text_key, error_key):
        # An import may name any file (/etc/shadow, a key): only a text that reads as TOML is shipped.
        redacted, found, unparsed_line = _redact(holder.get(text_key))
        secrets.extend(found)
        holder[text_key] = redacted
        if unparsed_line is not None and text_key != "dump_text":
            holder[text_key] = None
            holder[error_key] = NOT_TOML % unparsed_line

    config_text(evidence, "dump_text", None)
    for entry in evidence.get("config_files") or ():
        if entry.get("text") is not None:
            config_text(entry, "text", "error")
    for listing in evidence.get("dropin_dirs") or ():
        for entry in listing.get("entries") or ():
            if entry.get("text") is not None:
                config_text(entry, "text", "text_error")
    daemon = evidence.get("daemon")
    if isinstance(daemon, dict):
        if "stdout" in daemon:
            daemon["stdout"] = redact_json_secrets(daemon["stdout"])
        info = (daemon.get("response") or {}).get("info") if isinstance(daemon.get("response"), dict) else None
        if isinstance(info, dict):
            for key, value in info.items():
                info[key] = redact_json_secrets(value)
        for key in ("stderr", "error"):
            if key in daemon:
                daemon[key] = redact_message(daemon[key], secrets)
    if "dump_stderr" in evidence:
        evidence["dump_stderr"] = redact_message(evidence["dump_stderr"], secrets)
    for entry in evidence.get("config_files") or ():
        if entry.get("error"):
            entry["error"] = redact_message(entry["error"], secrets)
    return evidence
