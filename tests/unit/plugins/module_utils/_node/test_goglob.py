"""_goglob: Go's path/filepath Match and Glob, the rules containerd expands ``imports`` with.

The Match table is Go's own (src/path/filepath/match_test.go, the cases that apply on Unix); Glob runs
on real directory trees under tmp_path.
"""
import os

import pytest
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.goglob import (
    GlobLimitError,
    GlobPatternError,
    glob,
    has_meta,
    match,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.imports import walk_imports

BAD = "bad pattern"

# (pattern, name, expected) — expected is True, False or BAD (Go's ErrBadPattern).
GO_MATCH_CASES = [
    ("abc", "abc", True),
    ("*", "abc", True),
    ("*c", "abc", True),
    ("a*", "a", True),
    ("a*", "abc", True),
    ("a*", "ab/c", False),
    ("a*/b", "abc/b", True),
    ("a*/b", "a/c/b", False),
    ("a*b*c*d*e*/f", "axbxcxdxe/f", True),
    ("a*b*c*d*e*/f", "axbxcxdxexxx/f", True),
    ("a*b*c*d*e*/f", "axbxcxdxe/xxx/f", False),
    ("a*b*c*d*e*/f", "axbxcxdxexxx/fff", False),
    ("a*b?c*x", "abxbbxdbxebxczzx", True),
    ("a*b?c*x", "abxbbxdbxebxczzy", False),
    ("ab[c]", "abc", True),
    ("ab[b-d]", "abc", True),
    ("ab[e-g]", "abc", False),
    ("ab[^c]", "abc", False),
    ("ab[^b-d]", "abc", False),
    ("ab[^e-g]", "abc", True),
    ("a\\*b", "a*b", True),
    ("a\\*b", "ab", False),
    ("a?b", "a\u263ab", True),
    ("a[^a]b", "a\u263ab", True),
    ("a???b", "a\u263ab", False),
    ("a[^a][^a][^a]b", "a\u263ab", False),
    ("[a-\u03b6]*", "\u03b1", True),
    ("*[a-\u03b6]", "A", False),
    ("a?b", "a/b", False),
    ("a*b", "a/b", False),
    ("[\\]a]", "]", True),
    ("[\\-]", "-", True),
    ("[x\\-]", "x", True),
    ("[x\\-]", "-", True),
    ("[x\\-]", "z", False),
    ("[\\-x]", "x", True),
    ("[\\-x]", "-", True),
    ("[\\-x]", "a", False),
    ("[]a]", "]", BAD),
    ("[-]", "-", BAD),
    ("[x-]", "x", BAD),
    ("[x-]", "-", BAD),
    ("[x-]", "z", BAD),
    ("[-x]", "x", BAD),
    ("[-x]", "-", BAD),
    ("[-x]", "a", BAD),
    ("\\", "a", BAD),
    ("[a-b-c]", "a", BAD),
    ("[", "a", BAD),
    ("[^", "a", BAD),
    ("[^bc", "a", BAD),
    ("a[", "a", BAD),
    ("a[", "ab", BAD),
    ("a[", "x", BAD),
    ("a/b[", "x", BAD),
    ("*x", "xxx", True),
    # What containerd drop-ins meet: the suffix must match, dot-files are not special.
    ("*.toml", "99-nvidia.toml", True),
    ("*.conf", "99-nvidia.toml", False),
    ("*.toml", ".hidden.toml", True),
    ("*", ".hidden", True),
    ("**", "a/b", False),
]


@pytest.mark.parametrize(("pattern", "name", "expected"), GO_MATCH_CASES)
def test_match_follows_go(pattern, name, expected):
    if expected is BAD:
        with pytest.raises(GlobPatternError):
            match(pattern, name)
    else:
        assert match(pattern, name) is expected


def test_bad_pattern_error_is_a_value_error_naming_the_pattern():
    with pytest.raises(ValueError, match=r"a\["):
        match("a[", "a")


@pytest.mark.parametrize(("pattern", "expected"), [
    ("/etc/containerd/conf.d/x.toml", False), ("*.toml", True), ("a?c", True), ("[ab]", True), ("a\\b", True),
    ("", False),
])
def test_has_meta(pattern, expected):
    assert has_meta(pattern) is expected


@pytest.fixture
def tree(tmp_path):
    """conf.d with files whose byte order differs from a naive or case-folded sort, a sub-directory and a dot-file."""
    conf_d = tmp_path / "conf.d"
    (conf_d / "sub").mkdir(parents=True)
    for name in ("b.toml", "B.toml", "a10.toml", "a2.toml", "_x.toml", ".hidden.toml", "99-nvidia.conf"):
        (conf_d / name).write_text("version = 2\n")
    (conf_d / "sub" / "deep.toml").write_text("version = 2\n")
    return tmp_path


def test_glob_sorts_by_byte_order_and_matches_dot_files(tree):
    names = [os.path.basename(path) for path in glob(f"{tree}/conf.d/*.toml")]
    assert names == [".hidden.toml", "B.toml", "_x.toml", "a10.toml", "a2.toml", "b.toml"]


def test_glob_star_never_crosses_a_slash(tree):
    assert glob(f"{tree}/conf.d/*/*.toml") == [f"{tree}/conf.d/sub/deep.toml"]
    # `**` is two stars in one segment, not recursion: it matches what `*` matches.
    assert glob(f"{tree}/conf.d/**/*.toml") == [f"{tree}/conf.d/sub/deep.toml"]
    assert f"{tree}/conf.d/sub/deep.toml" not in glob(f"{tree}/conf.d/*.toml")


def test_glob_with_magic_in_a_directory_segment(tree):
    other = tree / "other.d"
    other.mkdir()
    (other / "z.toml").write_text("")
    assert glob(f"{tree}/*.d/*.toml")[-1] == f"{tree}/other.d/z.toml"
    assert glob(f"{tree}/[co]*.d/z.toml") == [f"{tree}/other.d/z.toml"]


def test_glob_character_classes_and_escapes(tree):
    assert glob(f"{tree}/conf.d/a[0-9]*.toml") == [f"{tree}/conf.d/a10.toml", f"{tree}/conf.d/a2.toml"]
    assert glob(f"{tree}/conf.d/[^ab_.]*") == [f"{tree}/conf.d/{name}" for name in ("99-nvidia.conf", "B.toml", "sub")]
    star_file = tree / "conf.d" / "lit*eral.toml"
    star_file.write_text("")
    assert glob(f"{tree}/conf.d/lit\\*eral.toml") == [str(star_file)]


def test_glob_matching_nothing_is_empty_not_an_error(tree):
    assert glob(f"{tree}/conf.d/*.yaml") == []
    assert glob(f"{tree}/no-such-dir/*.toml") == []
    # A file where a directory is expected is an I/O problem Go ignores.
    assert glob(f"{tree}/conf.d/b.toml/*") == []


def test_glob_without_magic_returns_the_pattern_only_if_it_lstats(tree):
    assert glob(f"{tree}/conf.d/b.toml") == [f"{tree}/conf.d/b.toml"]
    assert glob(f"{tree}/conf.d/absent.toml") == []
    dangling = tree / "conf.d" / "dangling.toml"
    dangling.symlink_to(tree / "nowhere")
    assert glob(str(dangling)) == [str(dangling)]


def test_glob_rejects_a_bad_pattern_even_when_nothing_could_match(tree):
    with pytest.raises(GlobPatternError):
        glob(f"{tree}/no-such-dir/[.toml")
    with pytest.raises(GlobPatternError):
        glob(f"{tree}/conf.d/*[")


def test_glob_relative_pattern_resolves_against_cwd_and_stays_relative(tree, tmp_path_factory):
    assert glob("conf.d/*.conf", cwd=str(tree)) == ["conf.d/99-nvidia.conf"]
    # From another working directory (containerd 1.6.0-1.6.28 resolves from its own, `/`) it finds nothing.
    assert glob("conf.d/*.conf", cwd=str(tmp_path_factory.mktemp("elsewhere"))) == []


# --- bounded expansion (issue 22 item 4) ---------------------------------------------------------------------------

def self_linked(tmp_path, links=8):
    conf = tmp_path / "etc" / "containerd" / "conf.d"
    conf.mkdir(parents=True)
    (conf / "99-nvidia.toml").write_text("version = 2\n")
    for number in range(links):
        (conf / f"loop-{number}").symlink_to(".")
    return conf


def test_a_glob_over_directories_linked_into_themselves_stops_with_an_error(tmp_path):
    # 8 self-links and 8 levels: Go's Glob would produce 9**8 paths (past 120 s and 2.4 GB before the bound).
    conf = self_linked(tmp_path)
    pattern = f"{conf}/*/*/*/*/*/*/*/*/*.toml"
    with pytest.raises(GlobLimitError, match=r"walks a directory loop .*loop-0 is .*conf.d, through a symbolic link"):
        glob(pattern)


def test_a_glob_producing_more_paths_than_the_budget_stops_with_an_error(tmp_path):
    wide = tmp_path / "wide"
    for number in range(30):
        (wide / f"d{number:02}").mkdir(parents=True)
        for inner in range(30):
            (wide / f"d{number:02}" / f"{inner:02}.toml").write_text("")
    assert len(glob(f"{wide}/*/*.toml")) == 900
    with pytest.raises(GlobLimitError, match=r"expands to more than 500 paths"):
        glob(f"{wide}/*/*.toml", max_paths=500)


def test_the_node_walk_reports_a_bounded_glob_as_the_pattern_s_error(tmp_path):
    conf = self_linked(tmp_path)
    (conf.parent / "config.toml").write_text('version = 2\nimports = ["/etc/containerd/conf.d/*/*/*/*/*/*/*/*/*.toml"]\n')
    config_files, import_globs = walk_imports("/etc/containerd/config.toml", str(tmp_path))
    assert [entry["path"] for entry in config_files] == ["/etc/containerd/config.toml"]
    assert import_globs[0]["matches"] == [] and "walks a directory loop" in import_globs[0]["error"]
