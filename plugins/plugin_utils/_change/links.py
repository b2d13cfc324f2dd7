# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Symbolic links on the way to the role's files. Controller side, pure.

The role writes where the node's paths really lead: a ``conf.d`` that is a link to a directory elsewhere would have it
put the drop-in (registry credentials copied in) outside the containerd directory, so every planned file other than
the root must resolve into the real directory of the root config, or the change is refused naming the link. A root
config that is a link stays one: the role writes through it (``ansible.builtin.copy`` with ``follow: true``), the
file the link names is the one containerd reads.
"""

import posixpath


def _inside(path, directory):
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def real_path(path, realpaths):
    """``path`` resolved as the node resolved it (its own entry, else its directory's plus its name)."""
    if path in realpaths:
        return realpaths[path]
    directory = posixpath.dirname(path)
    return posixpath.join(realpaths[directory], posixpath.basename(path)) if directory in realpaths else None


def link_errors(files, *, root_path, realpaths):
    """One error per planned file (the root excepted) that resolves outside the root's real directory."""
    root_dir = posixpath.dirname(root_path)
    real_root_dir = realpaths.get(root_dir)
    if not real_root_dir:
        return []
    errors = []
    for item in files:
        if item["path"] == root_path:
            continue
        real = real_path(item["path"], realpaths)
        if real is None:
            errors.append(f"cannot tell where {item['path']} leads on the node (its symbolic links were not resolved)")
        elif not _inside(real, real_root_dir):
            errors.append(f"{item['path']} leads through a symbolic link to {real}, outside {real_root_dir}, the real "
                          f"directory of the root config {root_path}: the role writes only there (make "
                          f"{posixpath.dirname(item['path'])} a directory inside it, or set option dropin_dir "
                          "to one)")
    return errors
