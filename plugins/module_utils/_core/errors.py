"""The one exception type the core raises for input it cannot judge.

Its message is the user-facing sentence: it names the input (file, command, server) and the problem.
Entry points turn it into ``fail_json``/``AnsibleActionFail``/a line on stderr, never a traceback.
"""


class RuntimeGateError(Exception):
    """Input that cannot be judged; ``str(error)`` is the message a user sees."""


# User data (a handler, a label, a server's Status message) is quoted in messages, but never whole: a few hundred
# bytes of YAML aliases or a hostile server can make a value megabytes long once printed.
MAX_SHOWN_CHARS = 80
_ELLIPSIS = "…"


def cut_text(text, limit=MAX_SHOWN_CHARS):
    """``text`` itself when at most ``limit`` characters, else its start and an ellipsis (``limit`` in all)."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + _ELLIPSIS


def shown_value(value, limit=MAX_SHOWN_CHARS):
    """``repr(value)`` for a message, at most ``limit`` characters, without ever building the whole repr.

    The repr is produced piece by piece and stops once past ``limit``, so a value that holds itself (a YAML alias
    can do that) or millions of items costs no more than a short one.
    """
    pieces = []
    length = 0
    for piece in _repr_pieces(value, limit):
        pieces.append(piece)
        length += len(piece)
        if length > limit:
            break
    return cut_text("".join(pieces), limit)


def _repr_pieces(value, limit):
    if isinstance(value, dict):
        yield "{"
        for index, (key, item) in enumerate(value.items()):
            yield ", " if index else ""
            yield from _repr_pieces(key, limit)
            yield ": "
            yield from _repr_pieces(item, limit)
        yield "}"
    elif isinstance(value, (list, tuple)):
        yield "["
        for index, item in enumerate(value):
            yield ", " if index else ""
            yield from _repr_pieces(item, limit)
        yield "]"
    elif isinstance(value, str):
        yield repr(value[: limit + 1])
    elif isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 4 * limit:
        # repr() of an int of more than 4300 digits raises ValueError (Python 3.11+); its size says enough.
        yield f"<an integer of {value.bit_length()} bits>"
    else:
        yield repr(value)
