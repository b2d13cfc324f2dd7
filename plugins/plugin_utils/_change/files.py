# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""How the role's files are written: the drop-in's name, each file's mode and owner, the backups and their pruning,
the directories to create, and the diff shown for them. Pure functions over the node's evidence; controller side.

Each decides one thing the containerd_runtimes role then carries out with plain ``ansible.builtin`` tasks.
"""

import difflib
import posixpath
import re

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node import goglob as _goglob
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.redaction import redact_message, redact_toml

DEFAULT_DROPIN_NAME = "99-gpufleet.toml"
# nvidia-ctk's drop-in (`nvidia-ctk runtime configure --drop-in-config`, NVIDIA/nvidia-container-toolkit
# pkg/config/engine/containerd/config_drop_in.go; the GPU operator's toolkit writes the same name). On 1.x a file
# loaded after the role's drop-in that declares the CRI plugin replaces the drop-in's whole table, so the role's
# default name must sort after it: "99-zz-..." > "99-nvidia.toml" in Go's sorted Glob.
NVIDIA_CTK_DROPIN_NAME = "99-nvidia.toml"
AFTER_NVIDIA_CTK_DROPIN_NAME = "99-zz-gpufleet.toml"
BACKUP_DIR_NAME = ".runtime-gate-backups"
KEPT_BACKUPS = 3
_BACKUP_STAMP = re.compile(r"\.\d{8}T\d{6}\d*Z~\Z")


def dropin_name_for(requested_name, dropin_dir, loaded_paths):
    """The drop-in's file name: the requested one, or by default one that sorts after nvidia-ctk's drop-in when the
    node loads it (and keeps that name once written, so a later run never leaves an orphan)."""
    if requested_name:
        return requested_name
    after_nvidia = posixpath.join(dropin_dir, AFTER_NVIDIA_CTK_DROPIN_NAME)
    if after_nvidia in loaded_paths or posixpath.join(dropin_dir, NVIDIA_CTK_DROPIN_NAME) in loaded_paths:
        return AFTER_NVIDIA_CTK_DROPIN_NAME
    return DEFAULT_DROPIN_NAME


def backup_dir_for(requested_dir, dropin_dir):
    """Default: ``.runtime-gate-backups`` next to the drop-in directory, outside the patterns a node imports."""
    return requested_dir or posixpath.join(posixpath.dirname(dropin_dir.rstrip("/")), BACKUP_DIR_NAME)


def _narrowest(modes):
    """The permission bits every one of ``modes`` grants (``"0600"`` and ``"0644"`` give ``"0600"``)."""
    bits = 0o7777
    for mode in modes:
        bits &= int(mode, 8)
    return "%04o" % bits


def set_file_modes(plan, stats, root_path):
    """Give each planned file the mode, owner and group it must keep: never more open than the files it carries
    settings from. The root keeps its own (the atomic write keeps them); a drop-in that carries the CRI table of other
    files (1.x) gets the narrowest of their modes and its own, and the owner and group of the file it carries from."""
    for item in plan["files"]:
        own = stats.get(item["path"])
        sources = [stats[path] for path in plan.get("carried_from") or () if stats.get(path)]
        item["mode"], item["owner"], item["group"] = (own or {}).get("mode"), None, None
        if item["path"] == root_path or not sources:
            continue
        item["mode"] = _narrowest([source["mode"] for source in sources] + ([own["mode"]] if own else []))
        item["owner"], item["group"] = str(sources[-1]["uid"]), str(sources[-1]["gid"])


def import_entries_catching(path, import_entries):
    """The import entries (absolute, Go filepath.Match) that would load ``path`` or the directory holding it."""
    caught = []
    for entry in import_entries:
        if not entry.startswith("/"):
            continue
        for candidate in (path, posixpath.dirname(path)):
            try:
                matched = _goglob.match(entry, candidate) if "*" in entry else entry == candidate
            except _goglob.GlobPatternError:
                matched = False
            if matched and entry not in caught:
                caught.append(entry)
    return caught


def plan_backups(plan, *, backup_dir, stamp, existing_paths, import_entries, listing):
    """Sets ``backup`` on every changed file that exists (None otherwise) and returns ``(errors, prune)``.

    A backup where an import pattern can catch it would be loaded after the new file and win (``conf.d/*``): refused,
    naming the pattern. Of each file's older backups the newest ``KEPT_BACKUPS - 1`` stay, the rest are pruned.
    """
    errors, prune = [], []
    for item in plan["files"]:
        item["backup"] = None
        if not item.get("changed") or item["path"] not in existing_paths:
            continue
        name = posixpath.basename(item["path"])
        item["backup"] = posixpath.join(backup_dir, f"{name}.{stamp}~")
        caught = import_entries_catching(item["backup"], import_entries)
        if caught:
            errors.append(f"the backup {item['backup']} would be loaded by the import {', '.join(caught)} and win over "
                          f"the new file: set option backup_dir to a directory no import pattern matches")
        older = sorted(entry for entry in listing or () if entry.startswith(name + ".") and _BACKUP_STAMP.search(entry))
        prune.extend(posixpath.join(backup_dir, entry) for entry in older[:max(len(older) - (KEPT_BACKUPS - 1), 0)])
    return errors, prune


def dirs_to_create(paths, stats, *, mode=None, remove_on_rollback=True):
    """Each missing directory of ``paths`` with ``mode`` or else the mode of its existing parent (never the umask's 0755
    on a 0750 tree); an existing directory is left as it is, its mode untouched."""
    created = []
    for directory in sorted({posixpath.dirname(path) for path in paths}):
        if stats.get(directory) is None:
            parent = stats.get(posixpath.dirname(directory))
            created.append({"path": directory, "mode": mode or (parent["mode"] if parent else "0755"),
                            "remove_on_rollback": remove_on_rollback})
    return created


def redacted_diff(files, texts, secrets):
    """The unified diff of each changed file, credential values replaced, for ``--diff``."""
    lines = []
    for item in files:
        if not item.get("changed"):
            continue
        before = redact_toml(texts.get(item["path"]) or "")[0]
        after = redact_toml(item["content"])[0]
        diff = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                    fromfile=f"before: {item['path']}", tofile=f"after: {item['path']}")
        lines.extend(redact_message(line.rstrip("\n"), secrets) for line in diff)
    return lines


def redacted_file_diffs(files, texts, secrets):
    """Ansible's own diff (``before``/``after`` with a header per file) of each changed file, credential values replaced:
    what the role's ``containerd_runtime_config_diff`` task returns for ``--diff``."""
    def shown(text):
        return "".join(redact_message(line, secrets) for line in redact_toml(text or "")[0].splitlines(keepends=True))

    return [{"before_header": item["path"], "after_header": item["path"], "before": shown(texts.get(item["path"])),
             "after": shown(item["content"])} for item in files if item.get("changed")]
