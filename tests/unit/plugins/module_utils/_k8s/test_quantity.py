"""Kubernetes quantities: every suffix family, exact arithmetic, and a clear error on garbage."""
from fractions import Fraction

import pytest

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._k8s.quantity import (
    QuantityError,
    format_quantity,
    parse_quantity,
    parse_resource_list,
)


@pytest.mark.parametrize("text, expected", [
    ("1", 1), ("0", 0), ("250m", Fraction(1, 4)), ("1500m", Fraction(3, 2)), ("0.5", Fraction(1, 2)),
    (".5", Fraction(1, 2)), ("5.", 5), ("+2", 2), ("-1", -1), ("100n", Fraction(1, 10 ** 7)),
    ("2u", Fraction(2, 10 ** 6)),
    ("1k", 1000), ("1M", 10 ** 6), ("1G", 10 ** 9), ("1T", 10 ** 12), ("1P", 10 ** 15), ("1E", 10 ** 18),
    ("1Ki", 1024), ("120Mi", 120 * 1024 ** 2), ("1.5Gi", 3 * 1024 ** 3 // 2), ("1Ti", 1024 ** 4),
    ("1Pi", 1024 ** 5), ("1Ei", 1024 ** 6),
    ("1e3", 1000), ("1E3", 1000), ("12e-3", Fraction(12, 1000)), ("1e+2", 100), ("2.5e1", 25),
    (8, 8), (0.25, Fraction(1, 4)),
])
def test_parses_every_suffix_exactly(text, expected):
    assert parse_quantity(text) == expected


def test_arithmetic_is_exact_where_floats_are_not():
    # 0.1 + 0.2 != 0.3 in floats; a node with exactly 300m must still hold 100m + 200m.
    assert parse_quantity("0.1") + parse_quantity("0.2") == parse_quantity("300m")
    assert parse_quantity("900m") + parse_quantity("250m") == parse_quantity("1.15")


@pytest.mark.parametrize("garbage", ["", " 1", "1 ", "abc", "1.2.3", "m", "1KI", "1ki", "1e", "1Ki2", "--1",
                                     "1mi", "0x10", "1_000", "nan", "inf", "1e999", "9" * 200])
def test_garbage_is_one_clear_error(garbage):
    with pytest.raises(QuantityError) as raised:
        parse_quantity(garbage, "Node 'gpu-1' allocatable cpu")
    message = str(raised.value)
    assert message.startswith("Node 'gpu-1' allocatable cpu") and "\n" not in message


@pytest.mark.parametrize("value", [None, True, [], {}])
def test_non_quantity_types_are_refused(value):
    with pytest.raises(QuantityError, match="not a quantity"):
        parse_quantity(value)


def test_resource_list_names_the_resource_in_errors():
    expected = {"cpu": Fraction(1, 4), "memory": 120 * 1024 ** 2}
    assert parse_resource_list({"cpu": "250m", "memory": "120Mi"}, "x") == expected
    assert parse_resource_list(None, "x") == {}
    with pytest.raises(QuantityError, match=r"^RuntimeClass 'kata' overhead.podFixed memory 'lots' is not"):
        parse_resource_list({"memory": "lots"}, "RuntimeClass 'kata' overhead.podFixed")
    with pytest.raises(QuantityError, match="must be a mapping"):
        parse_resource_list(["cpu"], "x")


@pytest.mark.parametrize("value, resource, shown", [
    (Fraction(23, 20), "cpu", "1150m"), (1, "cpu", "1"), (8, "cpu", "8"), (0, "cpu", "0"),
    (120 * 1024 ** 2, "memory", "120Mi"), (1024 ** 3, "memory", "1Gi"), (1000, "memory", "1000"),
    (3, "nvidia.com/gpu", "3"), (Fraction(1, 3), "cpu", "0.333333"),
])
def test_format_reads_like_kubectl(value, resource, shown):
    assert format_quantity(value, resource) == shown
