"""_toml_imports: the node's tomllib-free reader of the top-level ``imports`` array, checked against tomllib."""
import tomllib

import pytest
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.toml_imports import (
    read_top_level_imports,
)
from support.containerd_trees import TREES
from support.paths import REPO_ROOT

VALID_TEXTS = {
    "one-line": 'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n',
    "literal-multiline-comments": (
        "version = 2  # root\n"
        "# imports = ['commented out']\n"
        "imports = [ # the drop-ins\n"
        "  '/etc/containerd/conf.d/*.toml',  # glob\n"
        "\n"
        '  "relative.toml" ,\n'
        "]\n"
        "[plugins]\n"),
    "escapes": 'imports = ["/a\\\\b\\".toml", "/caf\\u00e9/*.toml", "/t\\tx", "/\\U0001F600.toml"]\n',
    "after-a-header-is-not-top-level": 'version = 2\n[plugins]\nimports = ["/x/*.toml"]\n',
    "none": 'version = 2\nroot = "/var/lib/containerd"\n',
    "empty-file": "",
    "empty-array": "imports = []\n",
    "values-that-look-like-headers": (
        "nested = [\n"
        '["[not-a-header]"],\n'
        "[1, 2],\n"
        "]\n"
        'text = """\n[still not a header]\nimports = ["fake"]\n"""\n'
        "literal = '''\n[nor this]'''\n"
        "imports = ['/real/*.toml']\n"),
    "inline-table-and-scalars": (
        'timeouts = { "io.containerd.timeout.shim.cleanup" = "5s", nested = { a = [1, 2] } }\n'
        "empty = {}\n"
        "when = 1979-05-27 07:32:00Z\n"
        "day = 1979-05-27\n"
        "ratio = -1.5e3\n"
        "hex = 0xDEAD_BEEF\n"
        "flag = true\n"
        "oom_score = -999\n"
        'imports = ["/after/scalars.toml"]\n'),
    "dotted-and-quoted-keys": 'a.b = 1\n"quoted key".c = "x"\nimports = ["/q.toml"]\n',
    "multiline-basic-string-entry": 'imports = ["""\n/ml/*.toml""", """/a\\\n    /b.toml"""]\n',
    "crlf-and-bom": '\ufeffversion = 2\r\nimports = [\r\n  "/crlf/*.toml",\r\n]\r\n',
    "array-of-tables-first": '[[x]]\nimports = ["/no.toml"]\n',
    "no-trailing-newline": 'imports = ["/eof.toml"]',
}


@pytest.mark.parametrize("name", sorted(VALID_TEXTS))
def test_agrees_with_tomllib(name):
    text = VALID_TEXTS[name]
    expected = tomllib.loads(text.lstrip("\ufeff")).get("imports")
    imports, error = read_top_level_imports(text)
    assert error is None
    assert imports == expected


def test_agrees_with_tomllib_on_every_config_file_in_the_repo_and_the_scenario_trees():
    trees = sorted(TREES.glob("*/etc/containerd/**/*.toml"))
    assert trees, f"no scenario trees under {TREES}"
    paths = sorted(REPO_ROOT.glob("inventory/**/*.toml")) + trees
    for path in paths:
        text = path.read_text(encoding="utf-8")
        try:
            expected = tomllib.loads(text).get("imports")
        except tomllib.TOMLDecodeError:
            continue
        assert read_top_level_imports(text) == (expected, None), path


@pytest.mark.parametrize(("text", "fragment"), [
    ('imports = "/etc/containerd/conf.d/*.toml"\n', "line 1: imports is not an array"),
    ("imports = [1]\n", "something other than strings"),
    ('version = 2\nimports = ["/a.toml"\n', "line 3: unterminated array"),
    ('imports = ["/a.toml" "/b.toml"]\n', "expected ',' or ']'"),
    ('imports = ["/a.toml]\n', "unterminated string"),
    ('imports = ["/a\\q"]\n', "invalid escape"),
    ('imports = ["/a"]\nimports = ["/b"]\n', "line 2: imports is defined twice"),
    ('x = """never closed\n', "unterminated multi-line string"),
    ("version 2\n", "expected '='"),
    ('imports = ["/a"] trailing\n', "unexpected text after a value"),
])
def test_unreadable_input_is_an_error_sentence_never_a_guess(text, fragment):
    imports, error = read_top_level_imports(text)
    assert imports is None
    assert fragment in error
