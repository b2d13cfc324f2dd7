"""_node_listings on real file trees: drop-in and CDI directory listings, and the texts of unloaded drop-ins."""

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node import listings as node_listings
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.gather import MAX_CONFIG_TEXT_BYTES
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.imports import walk_imports
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.listings import (
    dropin_listings,
    list_directory,
)
from support.node_trees import write


def test_listings_cover_glob_dirs_and_configured_dropin_dirs_once(tmp_path):
    conf_d = tmp_path / "conf.d"
    write(conf_d / "99-nvidia.toml", "version = 2\n")
    (conf_d / "sub").mkdir()
    root = write(tmp_path / "config.toml", f'imports = ["{conf_d}/*.conf", "conf.d/*.toml"]\n')
    _files, import_globs = walk_imports(root)
    listings = dropin_listings(import_globs, [f"{conf_d}/", str(tmp_path / "absent.d")])
    assert [(listing["path"], listing["listed_because"]) for listing in listings] == [
        (str(conf_d), [f"import {conf_d}/*.conf", "import conf.d/*.toml", "option dropin_dirs"]),
        (str(tmp_path / "absent.d"), ["option dropin_dirs"]),
    ]
    entries = {entry["name"]: entry for entry in listings[0]["entries"]}
    assert entries["99-nvidia.toml"]["is_file"] is True and entries["99-nvidia.toml"]["size"] == 12
    assert entries["sub"]["is_file"] is False
    assert listings[1]["exists"] is False and listings[1]["entries"] == []
    assert list_directory(root)["error"] == "is not a directory"


def test_listings_carry_the_text_of_unloaded_dropins_only(tmp_path, monkeypatch):
    conf_d = tmp_path / "conf.d"
    write(conf_d / "10-loaded.toml", "version = 2\n")
    write(conf_d / "50-other.conf", "version = 2\n")
    write(conf_d / "99-nvidia.toml", "version = 2\n# nvidia\n")
    write(conf_d / "README", "not a config\n")
    write(conf_d / "huge.toml", "#" * (MAX_CONFIG_TEXT_BYTES + 1))
    (conf_d / "dir.toml").mkdir()
    (conf_d / "dangling.conf").symlink_to(tmp_path / "nowhere")
    root = write(tmp_path / "config.toml", f'imports = ["{conf_d}/10-*.toml"]\n')
    config_files, import_globs = walk_imports(root)
    reached = {entry["path"] for entry in config_files}
    [listing] = dropin_listings(import_globs, [str(conf_d)], reached=reached)
    assert listing["texts_for"] == [".toml", ".conf"]
    texts = {entry["name"]: (entry["text"], entry["text_error"]) for entry in listing["entries"] if "text" in entry}
    assert texts == {
        "50-other.conf": ("version = 2\n", None),
        "99-nvidia.toml": ("version = 2\n# nvidia\n", None),
        "huge.toml": (None, "is 1048577 bytes, larger than the 1048576 byte limit"),
    }
    monkeypatch.setattr(node_listings, "MAX_CONFIG_FILES", 1)
    [listing] = dropin_listings(import_globs, [str(conf_d)], reached=reached)
    texts = {entry["name"]: (entry["text"], entry["text_error"]) for entry in listing["entries"] if "text" in entry}
    assert texts["50-other.conf"] == ("version = 2\n", None)
    assert texts["99-nvidia.toml"] == (None, "not read: more than 1 unloaded drop-in files")
