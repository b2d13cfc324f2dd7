"""Kubernetes resource quantities (``250m``, ``1.5Gi``, ``1e3``) as exact fractions.

The grammar is apimachinery's ``resource.Quantity`` (``k8s.io/apimachinery/pkg/api/resource/quantity.go``)::

    <quantity>  ::= <sign>? <number> <suffix>
    <number>    ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
    <suffix>    ::= <binarySI> | <decimalSI> | <decimalExponent>
    <binarySI>  ::= Ki | Mi | Gi | Ti | Pi | Ei                         (powers of 1024)
    <decimalSI> ::= n | u | m | "" | k | M | G | T | P | E              (n, u are accepted by ParseQuantity)
    <decimalExponent> ::= e <sign>? <digits> | E <sign>? <digits>       (so "1E" is an exa, "1E3" is 1000)

Values are ``fractions.Fraction``: ``0.1 + 0.2`` style float error would turn "exactly fits" into
"does not fit". Pure stdlib, so any side can import it.
"""

import re
from fractions import Fraction

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._core.errors import RuntimeGateError

_BINARY_SI = {"Ki": 1024, "Mi": 1024 ** 2, "Gi": 1024 ** 3, "Ti": 1024 ** 4, "Pi": 1024 ** 5, "Ei": 1024 ** 6}
_DECIMAL_SI = {"n": Fraction(1, 10 ** 9), "u": Fraction(1, 10 ** 6), "m": Fraction(1, 1000), "": Fraction(1),
               "k": Fraction(10 ** 3), "M": Fraction(10 ** 6), "G": Fraction(10 ** 9), "T": Fraction(10 ** 12),
               "P": Fraction(10 ** 15), "E": Fraction(10 ** 18)}
_QUANTITY = re.compile(
    r"(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:(?P<binary>Ki|Mi|Gi|Ti|Pi|Ei)|[eE](?P<exponent>[+-]?[0-9]+)|(?P<decimal>[numkMGTPE]?))"
)
# apimachinery refuses exponents beyond what an int64 scale can carry; far smaller bounds keep
# Fraction arithmetic cheap on hostile input and still cover every real quantity.
_MAX_EXPONENT = 64
_MAX_LENGTH = 100


class QuantityError(RuntimeGateError, ValueError):
    """A string that is not a Kubernetes quantity; the message names it and says why."""


def parse_quantity(text, what="quantity"):
    """``text`` (str, or an int/float YAML produced) → exact ``Fraction``; ``what`` names it in errors.

    >>> parse_quantity("250m")
    Fraction(1, 4)
    """
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise QuantityError(f"{what} {text!r} is a {type(text).__name__}, not a quantity (e.g. 250m, 1Gi)")
    if isinstance(text, (int, float)):
        text = repr(text) if isinstance(text, float) else str(text)
    if len(text) > _MAX_LENGTH:
        raise QuantityError(f"{what} is {len(text)} characters long; a quantity is at most {_MAX_LENGTH}")
    match = _QUANTITY.fullmatch(text)
    if not match:
        raise QuantityError(
            f"{what} {text!r} is not a Kubernetes quantity: expected a number with an optional suffix "
            "(m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent like 1e3)")
    value = Fraction(match.group("number"))
    if match.group("binary"):
        value *= _BINARY_SI[match.group("binary")]
    elif match.group("exponent") is not None:
        exponent = int(match.group("exponent"))
        if abs(exponent) > _MAX_EXPONENT:
            raise QuantityError(f"{what} {text!r} has exponent {exponent}; at most {_MAX_EXPONENT} either way is read")
        value *= Fraction(10) ** exponent
    else:
        value *= _DECIMAL_SI[match.group("decimal")]
    return -value if match.group("sign") == "-" else value


def parse_resource_list(resources, what):
    """``{resource: quantity}`` → ``{resource: Fraction}``; errors name ``what`` and the resource."""
    if resources is None:
        return {}
    if not isinstance(resources, dict):
        raise QuantityError(f"{what} must be a mapping of resource to quantity, not a {type(resources).__name__}")
    return {str(resource): parse_quantity(amount, f"{what} {resource}") for resource, amount in resources.items()}


def format_quantity(value, resource=""):
    """An exact value as people read it: fractions in millis (``1150m``), memory-like
    resources with the largest binary suffix that divides them (``120Mi``), everything else plain."""
    value = Fraction(value)
    if value.denominator == 1:
        number = value.numerator
        if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
            for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
                if number and number % _BINARY_SI[suffix] == 0:
                    return f"{number // _BINARY_SI[suffix]}{suffix}"
        return str(number)
    millis = value * 1000
    if millis.denominator == 1:
        return f"{millis.numerator}m"
    return f"{float(value):.6g}"
