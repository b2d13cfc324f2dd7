# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""One rule for JSON read from outside (an API answer, a slice report): plain JSON or nothing.

Python's reader takes a key given twice (last wins: a MISSING host could become OK) and ``NaN``/``Infinity`` (not JSON);
both are refused here with a message naming the key or the constant. The cluster file reader (``_k8s/manifest``) reads
JSON with this rule too, and hands text it refuses to its YAML reader, which refuses the same and names the line.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json


class StrictJsonError(ValueError):
    """Text that is not plain JSON; ``str()`` says what is wrong and where."""


def _object(pairs):
    mapping = dict(pairs)  # in C: a large export (10,000 Nodes) reads at json's own speed
    if len(mapping) < len(pairs):
        seen = set()
        for key, _value in pairs:
            if key in seen:
                raise StrictJsonError("the key %s is given twice in one object" % json.dumps(key)[:120])
            seen.add(key)
    return mapping


def _refuse_constant(name):
    raise StrictJsonError("%s is not a JSON value" % name)


def loads_strict(text):
    """The JSON value of ``text`` (str or bytes); StrictJsonError when it is not plain JSON."""
    try:
        return json.loads(text, object_pairs_hook=_object, parse_constant=_refuse_constant)
    except StrictJsonError:
        raise
    except RecursionError:
        raise StrictJsonError("nested too deeply") from None
    except json.JSONDecodeError as error:
        raise StrictJsonError("%s at line %d column %d" % (error.msg, error.lineno, error.colno)) from None
    except (ValueError, TypeError) as error:
        raise StrictJsonError(str(error)) from None
