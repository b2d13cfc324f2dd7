"""The scenario trees kept in the repo (tests/fixtures/containerd/trees, see its README) and what the real containerd
releases print for them, produced at test time: no dump or daemon capture is ever read from a file kept anywhere.

``release_named("2.3")`` is one of support.containerd_daemons.releases(); ``dumped("S1", "2.3", tmp_path)`` copies the
S1 tree to a fresh node root under ``tmp_path`` (optionally with files added or replaced), runs that release's
``containerd config dump`` on it as the node's /etc/containerd and writes the output to ``config-dump.toml`` beside the
node root, as a node's captured dump would lie.
"""
from __future__ import annotations

import shutil
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from support.containerd_daemons import Daemon, Release, config_dump, releases, remove_daemon, start_daemon
from support.paths import REPO_ROOT

TREES = REPO_ROOT / "tests" / "fixtures" / "containerd" / "trees"
# A dump file's companion: what `containerd --version` printed where the dump was taken (containerd_facts reads it).
VERSION_FILE = "containerd-version.txt"
_RELEASES: dict[str, Release] = {}
# The tree from which each release's daemon serves runc, nvidia and nvidia-cdi: S3full (version 2) on 1.x, which refuses
# (1.7) or ignores (1.6) version 3; S1 (version 3, migrated to 4 by 2.3+) on 2.x. Its "-after-edit" twin lacks nvidia-cdi.
SERVING_SCENARIO = {"1.6": "S3full", "1.7": "S3full", "2.2": "S1", "2.3": "S1", "2.4": "S1"}


def scenarios() -> list[str]:
    """Every scenario tree in the repo."""
    return sorted(path.name for path in TREES.iterdir() if (path / "etc" / "containerd" / "config.toml").is_file())


def release_named(name: str) -> Release:
    """The release called ``name`` ("1.6", "1.7", "2.2", "2.3", "2.4"); fails (skips locally) like releases()."""
    if not _RELEASES:
        _RELEASES.update((release.name, release) for release in releases())
    found = _RELEASES
    if name not in found:
        raise KeyError(f"no containerd release named {name!r}: the tests run {sorted(found)}")
    return found[name]


def scenario_etc(scenario: str) -> Path:
    """The scenario's etc/containerd directory in the repo (read only: copy it before changing anything)."""
    etc = TREES / scenario / "etc" / "containerd"
    if not (etc / "config.toml").is_file():
        raise FileNotFoundError(f"no scenario tree {scenario!r} under {TREES}")
    return etc


def copy_tree(scenario: str, node_root: Path, extra: dict | None = None) -> Path:
    """Copy the scenario to ``node_root/etc/containerd``; ``extra`` = ``{path under etc/containerd: text}`` is written
    over it (a new or replaced file). Returns ``node_root``."""
    etc = node_root / "etc" / "containerd"
    shutil.copytree(scenario_etc(scenario), etc)
    for relative, text in (extra or {}).items():
        (etc / relative).parent.mkdir(parents=True, exist_ok=True)
        (etc / relative).write_text(text, encoding="utf-8")
    return node_root


def version_output(release: Release) -> str:
    """What ``containerd --version`` prints for this release."""
    return subprocess.run([release.binary, "--version"], capture_output=True, text=True, check=True, timeout=30).stdout.strip()


@dataclass
class Dump:
    release: Release
    node_root: Path      # the node's / : <node_root>/etc/containerd is the tree the dump was taken of
    returncode: int
    text: str            # stdout of `containerd config dump` ("" when it refused the tree)
    stderr: str
    path: Path           # the dump written to a file (config-dump.toml), as a node's capture would lie

    @property
    def etc(self) -> Path:
        return self.node_root / "etc" / "containerd"

    def write_version_file(self) -> Path:
        """``containerd-version.txt`` beside the dump file: what this release's ``--version`` prints."""
        path = self.path.parent / VERSION_FILE
        path.write_text(version_output(self.release) + "\n", encoding="utf-8")
        return path


def dump_node(release: Release, node_root: Path, dump_path: Path | None = None) -> Dump:
    """The real ``containerd config dump`` of ``node_root/etc/containerd``, written to ``dump_path`` (default: a
    ``config-dump.toml`` beside ``node_root``)."""
    completed = config_dump(release, node_root)
    path = dump_path or node_root.parent / f"{node_root.name}-config-dump" / "config-dump.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(completed.stdout, encoding="utf-8")
    return Dump(release, node_root, completed.returncode, completed.stdout, completed.stderr, path)


def dumped(scenario: str, release_name: str, directory: Path, extra: dict | None = None, name: str | None = None) -> Dump:
    """Copy ``scenario`` (with ``extra`` files) to ``directory/<name>/node`` and dump it with release ``release_name``.

    ``name`` (default ``<scenario>-<release>``) keeps several dumps apart in one directory."""
    release = release_named(release_name)
    base = directory / (name or f"{scenario}-{release.version}")
    node_root = copy_tree(scenario, base / "node", extra)
    return dump_node(release, node_root, base / "config-dump.toml")


def dump_text(scenario: str, release_name: str, directory: Path, extra: dict | None = None) -> str:
    """The dump's text; fails the test when the release refused the tree."""
    dump = dumped(scenario, release_name, directory, extra)
    assert dump.returncode == 0 and dump.text.strip(), (
        f"containerd {dump.release} refused the {scenario} tree (exit {dump.returncode}): {dump.stderr[-600:]}")
    return dump.text


@contextmanager
def running_daemon(release: Release, node_root: Path):
    """A real daemon of ``release`` on ``node_root/etc/containerd`` (support.containerd_daemons), removed afterwards;
    fails when the daemon did not stay up."""
    daemon: Daemon = start_daemon(release, node_root)
    try:
        assert daemon.running(), f"containerd {release} exited on the tree:\n{daemon.log()[-3000:]}"
        yield daemon
    finally:
        remove_daemon(daemon)
