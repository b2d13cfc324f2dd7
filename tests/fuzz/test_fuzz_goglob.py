"""Fuzzing the Go-glob matcher (plugins/module_utils/_node/goglob.py) against a model written from the Go spec.

The model (https://pkg.go.dev/path/filepath#Match) does not follow Go's chunk-by-chunk algorithm: it
tokenises the pattern by the grammar below, calls it malformed when the grammar fails, and matches the
tokens with a memoised search.

    term:  '*' (any run of non-'/')  |  '?' (one non-'/')  |  '[' ['^'] { range } ']'  |  c  |  '\\' c
    range: c (not '\\', '-', ']')  |  '\\' c  |  lo '-' hi        (a class is never empty)

A class may match '/', Go's does. ``glob`` is checked on real temp directories: Go lists each directory
sorted by name, ``*`` matches dot files, a malformed pattern is an error even when nothing would match.
"""
import functools
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.goglob import GlobPatternError, glob, match
from fuzz.fuzzing import fuzz_settings

STAR, ANY = "*", "?"
PATTERN_CHARS = "ab./*?[]^-\\!é"
NAME_CHARS = "ab./-]^!*?[\\é"


class Malformed(Exception):
    pass


def tokenise(pattern):
    tokens, index = [], 0
    while index < len(pattern):
        char = pattern[index]
        index += 1
        if char in (STAR, ANY):
            tokens.append(char)
        elif char == "\\":
            if index == len(pattern):
                raise Malformed()
            tokens.append(("literal", pattern[index]))
            index += 1
        elif char == "[":
            negated = pattern.startswith("^", index)
            index += negated
            ranges = []
            while not (pattern.startswith("]", index) and ranges):
                low, index = class_char(pattern, index)
                high = low
                if pattern.startswith("-", index):
                    high, index = class_char(pattern, index + 1)
                ranges.append((low, high))
            tokens.append(("class", negated, tuple(ranges)))
            index += 1
        else:
            tokens.append(("literal", char))
    return tuple(tokens)


def class_char(pattern, index):
    if index >= len(pattern) or pattern[index] in "-]":
        raise Malformed()
    if pattern[index] == "\\":
        index += 1
        if index >= len(pattern):
            raise Malformed()
    return pattern[index], index + 1


def model_match(pattern, name):
    """True/False, or None when the pattern is malformed."""
    try:
        tokens = tokenise(pattern)
    except Malformed:
        return None

    @functools.lru_cache(maxsize=None)
    def matches_from(token_index, name_index):
        if token_index == len(tokens):
            return name_index == len(name)
        token = tokens[token_index]
        if token == STAR:
            end = name_index
            while True:
                if matches_from(token_index + 1, end):
                    return True
                if end == len(name) or name[end] == "/":
                    return False
                end += 1
        if name_index == len(name):
            return False
        char = name[name_index]
        if token == ANY:
            single = char != "/"
        elif token[0] == "literal":
            single = char == token[1]
        else:
            _kind, negated, ranges = token
            single = any(low <= char <= high for low, high in ranges) != negated
        return single and matches_from(token_index + 1, name_index + 1)

    return matches_from(0, 0)


def go_match(pattern, name):
    try:
        return match(pattern, name)
    except GlobPatternError:
        return None


PATTERNS = st.text(alphabet=PATTERN_CHARS, max_size=10)
NAMES = st.text(alphabet=NAME_CHARS, max_size=8)


@fuzz_settings(2500)
@given(PATTERNS, NAMES)
def test_match_agrees_with_the_spec_model(pattern, name):
    assert go_match(pattern, name) == model_match(pattern, name)


@fuzz_settings(800)
@given(st.lists(st.sampled_from(["*", "?", "a", "b", "/", "[ab]", "[^a]", "\\*", "[a-b]", "[/]"]), max_size=6),
       st.text(alphabet="ab/*", max_size=8))
def test_match_of_well_formed_patterns_agrees_with_the_model(parts, name):
    """Well-formed patterns built from terms, so matches are frequent (random text is mostly malformed)."""
    pattern = "".join(parts)
    assert model_match(pattern, name) is not None
    assert go_match(pattern, name) == model_match(pattern, name)


def test_the_model_knows_go_s_quirks():
    """Documented Go behaviour, so the model itself is checked against something other than _goglob."""
    assert model_match("*", ".hidden") is True          # no dot-file rule
    assert model_match("a*", "a/b") is False             # '*' never crosses '/'
    assert model_match("a[/]b", "a/b") is True           # a class may match '/'
    assert model_match("[!a]", "!") is True              # '!' is no negation in Go
    assert model_match("[^a]", "b") is True
    assert model_match("[]a]", "]") is None              # a class is never empty
    assert model_match("[a-", "a") is None
    assert model_match("a\\", "a") is None               # trailing escape
    assert model_match("x[", "y") is None                # malformed even though it cannot match


FILE_NAMES = st.text(alphabet="ab.-[]^!é ", min_size=1, max_size=4).filter(lambda name: name not in (".", ".."))
SEGMENT_PATTERNS = st.text(alphabet="ab.-*?[]^\\é", min_size=1, max_size=5).filter(lambda part: part not in (".", ".."))


@fuzz_settings(300)
@given(st.dictionaries(FILE_NAMES, st.lists(FILE_NAMES, max_size=3, unique=True), max_size=4),
       st.lists(FILE_NAMES, max_size=2, unique=True), SEGMENT_PATTERNS, SEGMENT_PATTERNS)
def test_glob_on_a_real_tree_agrees_with_the_model(tmp_path_factory, directories, top_files, dir_pattern, file_pattern):
    root = tmp_path_factory.mktemp("glob")
    for directory, names in directories.items():
        (root / directory).mkdir()
        for name in names:
            (root / directory / name).write_text("")
    for name in top_files:
        if name not in directories:
            (root / name).write_text("")  # files at the first level: never descended into

    pattern = f"{root}/{dir_pattern}/{file_pattern}"
    # Go checks the whole pattern, then again each directory part it globs: "[/]" is a class holding '/',
    # yet "root/[/]" globs the directory part "root/[", which is malformed.
    if model_match(pattern, "") is None or model_match(dir_pattern, "") is None:
        with pytest.raises(GlobPatternError):
            glob(pattern)
        return
    expected = [f"{root}/{directory}/{name}"
                for directory in sorted(os.listdir(root)) if (root / directory).is_dir() and model_match(dir_pattern, directory)
                for name in sorted(os.listdir(root / directory)) if model_match(file_pattern, name)]
    assert glob(pattern) == expected


def test_glob_without_meta_returns_the_path_only_if_it_lstats(tmp_path):
    (tmp_path / "present.toml").write_text("")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    assert glob(str(tmp_path / "present.toml")) == [str(tmp_path / "present.toml")]
    assert glob(str(tmp_path / "dangling")) == [str(tmp_path / "dangling")]
    assert glob(str(tmp_path / "absent.toml")) == []
