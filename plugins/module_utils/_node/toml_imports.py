# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The top-level ``imports`` array of a containerd config file, read on the node without ``tomllib``.

Runs on nodes: standard library only, Python 3.8 syntax. Nodes may run Python < 3.11, so there is no
TOML parser; this reader scans only the part of the file containerd takes ``imports`` from: the
key/value pairs *before the first table header*. An ``imports`` key after a header belongs to that
table and is ignored by containerd (docs/containerd-loading.md §8), so it is not read here either.

It skips every other value exactly (basic, literal and multi-line strings, nested arrays, inline
tables, scalars), so a ``[`` inside a value is never taken for a table header. Anything it cannot
read is an error string; the node never guesses. The controller re-parses every file with ``tomllib``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

_BARE_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\", "e": "\x1b"}


class TomlImportsError(ValueError):
    pass


def read_top_level_imports(text):
    """``(imports, error)``: the list of strings of the top-level ``imports`` key (None when absent),
    or ``(None, "line N: what went wrong")`` when the top-level part cannot be read."""
    try:
        return _Scanner(text).imports(), None
    except TomlImportsError as error:
        return None, str(error)
    except RecursionError:
        return None, "values are nested too deeply to read"


class _Scanner:
    def __init__(self, text):
        self.text = text[1:] if text.startswith("\ufeff") else text
        self.pos = 0

    # -- driver -------------------------------------------------------------------------------------
    def imports(self):
        found = None
        while True:
            self._skip_blank_lines()
            if self._at_end() or self._peek() == "[":
                return found  # end of file or the first table header: containerd reads no further
            line = self._line()
            key = self._key()
            self._skip_spaces()
            if self._peek() != "=":
                raise self._error("expected '=' after key %s" % ".".join(key))
            self.pos += 1
            self._skip_spaces()
            if key == ["imports"]:
                if found is not None:
                    raise self._error("imports is defined twice (first on an earlier line)", line)
                found = self._imports_value()
            else:
                self._skip_value()
            self._end_of_line()

    def _imports_value(self):
        if self._peek() != "[":
            raise self._error("imports is not an array")
        self.pos += 1
        entries = []
        while True:
            self._skip_array_space()
            if self._peek() == "]":
                self.pos += 1
                return entries
            if self._peek() not in ('"', "'"):
                raise self._error("imports holds something other than strings")
            entries.append(self._string())
            self._skip_array_space()
            char = self._peek()
            if char == ",":
                self.pos += 1
            elif char != "]":
                raise self._error("expected ',' or ']' in the imports array")

    # -- values ---------------------------------------------------------------------------------------
    def _skip_value(self):
        char = self._peek()
        if char in ('"', "'"):
            self._string()
        elif char == "[":
            self.pos += 1
            while True:
                self._skip_array_space()
                if self._peek() == "]":
                    self.pos += 1
                    return
                self._skip_value()
                self._skip_array_space()
                if self._peek() == ",":
                    self.pos += 1
                elif self._peek() != "]":
                    raise self._error("expected ',' or ']' in an array")
        elif char == "{":
            self.pos += 1
            self._skip_spaces()
            if self._peek() == "}":
                self.pos += 1
                return
            while True:
                self._skip_spaces()
                self._key()
                self._skip_spaces()
                if self._peek() != "=":
                    raise self._error("expected '=' in an inline table")
                self.pos += 1
                self._skip_spaces()
                self._skip_value()
                self._skip_spaces()
                if self._peek() == ",":
                    self.pos += 1
                elif self._peek() == "}":
                    self.pos += 1
                    return
                else:
                    raise self._error("expected ',' or '}' in an inline table")
        else:
            start = self.pos
            # Numbers, booleans, dates and times: no quotes, brackets or comment signs inside.
            while not self._at_end() and self._peek() not in ",]}#\n\r" and not self._peek_is_space_before_end():
                self.pos += 1
            if self.pos == start:
                raise self._error("missing value")

    def _peek_is_space_before_end(self):
        # A date-time may contain one space ("1979-05-27 07:32:00"); any other space ends the scalar.
        if self._peek() not in " \t":
            return False
        following = self.text[self.pos + 1:self.pos + 2]
        return not following.isdigit()

    def _string(self):
        quote = self._peek()
        if self.text.startswith(quote * 3, self.pos):
            return self._multiline_string(quote)
        self.pos += 1
        chars = []
        while True:
            if self._at_end() or self._peek() in "\n\r":
                raise self._error("unterminated string")
            char = self._peek()
            self.pos += 1
            if char == quote:
                return "".join(chars)
            if char == "\\" and quote == '"':
                chars.append(self._escape())
            else:
                chars.append(char)

    def _multiline_string(self, quote):
        self.pos += 3
        if self.text.startswith("\r\n", self.pos):
            self.pos += 2
        elif self.text.startswith("\n", self.pos):
            self.pos += 1
        chars = []
        while True:
            if self._at_end():
                raise self._error("unterminated multi-line string")
            if self.text.startswith(quote * 3, self.pos):
                # Up to two quotes may directly precede the closing delimiter.
                extra = 0
                while extra < 2 and self.text.startswith(quote, self.pos + 3 + extra):
                    extra += 1
                chars.append(quote * extra)
                self.pos += 3 + extra
                return "".join(chars)
            char = self._peek()
            self.pos += 1
            if char == "\\" and quote == '"':
                rest = self.text[self.pos:]
                stripped = rest.lstrip(" \t")
                if stripped.startswith("\n") or stripped.startswith("\r\n"):
                    # A line-ending backslash trims the newline and all whitespace that follows it.
                    self.pos += len(rest) - len(rest.lstrip(" \t\r\n"))
                    continue
                chars.append(self._escape())
            else:
                chars.append(char)

    def _escape(self):
        if self._at_end():
            raise self._error("unterminated escape")
        char = self._peek()
        self.pos += 1
        if char in _ESCAPES:
            return _ESCAPES[char]
        if char in "uU":
            width = 4 if char == "u" else 8
            digits = self.text[self.pos:self.pos + width]
            try:
                code = int(digits, 16) if len(digits) == width else -1
                value = chr(code)
            except ValueError:
                code = -1
            if code < 0:
                raise self._error("invalid unicode escape")
            self.pos += width
            return value
        raise self._error("invalid escape '\\%s'" % char)

    # -- keys, space, lines -------------------------------------------------------------------------
    def _key(self):
        parts = []
        while True:
            self._skip_spaces()
            char = self._peek()
            if char in ('"', "'"):
                if self.text.startswith(char * 3, self.pos):
                    raise self._error("a multi-line string cannot be a key")
                parts.append(self._string())
            else:
                start = self.pos
                while not self._at_end() and self._peek() in _BARE_KEY_CHARS:
                    self.pos += 1
                if self.pos == start:
                    raise self._error("expected a key")
                parts.append(self.text[start:self.pos])
            self._skip_spaces()
            if self._peek() != ".":
                return parts
            self.pos += 1

    def _skip_spaces(self):
        while not self._at_end() and self._peek() in " \t":
            self.pos += 1

    def _skip_comment(self):
        if self._peek() == "#":
            while not self._at_end() and self._peek() != "\n":
                self.pos += 1

    def _skip_blank_lines(self):
        while True:
            self._skip_spaces()
            self._skip_comment()
            if self._at_end() or self._peek() not in "\r\n":
                return
            self.pos += 1

    def _skip_array_space(self):
        # Inside arrays, newlines and comments may appear between values.
        while True:
            self._skip_spaces()
            self._skip_comment()
            if self._at_end():
                raise self._error("unterminated array")
            if self._peek() not in "\r\n":
                return
            self.pos += 1

    def _end_of_line(self):
        self._skip_spaces()
        self._skip_comment()
        if self._at_end():
            return
        if self.text.startswith("\r\n", self.pos):
            self.pos += 2
        elif self._peek() == "\n":
            self.pos += 1
        else:
            raise self._error("unexpected text after a value")

    def _peek(self):
        return self.text[self.pos:self.pos + 1]

    def _at_end(self):
        return self.pos >= len(self.text)

    def _line(self):
        return self.text.count("\n", 0, self.pos) + 1

    def _error(self, message, line=None):
        return TomlImportsError("line %d: %s" % (line or self._line(), message))
