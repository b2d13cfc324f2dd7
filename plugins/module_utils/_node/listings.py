# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""Listings of the drop-in and CDI directories, with the text of drop-in files no import reached.

Runs on nodes: standard library only, Python 3.8 syntax. No judgement here.
"""

from __future__ import absolute_import, division, print_function

import os
import stat

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.gather import (
    host_path,
    read_text_file,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.imports import (
    MAX_CONFIG_FILES,
    non_magic_directory,
)

__metaclass__ = type

MAX_LISTING_ENTRIES = 1000

# Drop-in files no import reached whose text is shipped too (containerd's conventional drop-in suffixes).
DROPIN_TEXT_SUFFIXES = (".toml", ".conf")


def list_directory(path, host_root="/"):
    """``{"path", "exists", "error", "entries": [{name,size,mtime,is_file}], "truncated"}``, sorted by name.

    ``path`` is a node path, listed under ``host_root``; entries that are links are stat'ed inside it.
    """
    listing = {"path": path, "exists": False, "error": None, "entries": [], "truncated": False}
    real_path = host_path(host_root, path)
    try:
        names = sorted(os.listdir(real_path))
    except FileNotFoundError:
        return listing
    except NotADirectoryError:
        listing.update(exists=True, error="is not a directory")
        return listing
    except OSError as error:
        listing.update(exists=True, error="cannot be listed: %s" % (error.strerror or error))
        return listing
    listing["exists"] = True
    listing["truncated"] = len(names) > MAX_LISTING_ENTRIES
    for name in names[:MAX_LISTING_ENTRIES]:
        try:
            info = os.stat(host_path(host_root, os.path.join(path, name)))
        except OSError:  # a dangling symlink: containerd could not read it either
            listing["entries"].append({"name": name, "size": None, "mtime": None, "is_file": False})
            continue
        listing["entries"].append({"name": name, "size": info.st_size, "mtime": info.st_mtime,
                                   "is_file": stat.S_ISREG(info.st_mode)})
    return listing


def dropin_listings(import_globs, dropin_dirs, host_root="/", reached=()):
    """Listings of each glob's non-magic directory and of the configured drop-in directories, once each.

    Each regular ``*.toml``/``*.conf`` entry whose node path is not in ``reached`` (the files the import walk
    read) also carries its ``text`` and ``text_error`` (``read_text_file``, the config files' size limit), at most
    ``MAX_CONFIG_FILES`` in all: the controller links a missing handler to the unloaded file that defines it.
    Each listing says so with ``texts_for`` (the suffixes whose text it carries).
    """
    sources = {}
    for expansion in import_globs:
        if expansion["glob"]:
            directory = non_magic_directory(expansion["resolved_pattern"])
            sources.setdefault(directory, []).append("import " + expansion["pattern"])
    for directory in dropin_dirs:
        sources.setdefault(os.path.normpath(directory), []).append("option dropin_dirs")
    listings = []
    texts_read = 0
    for directory, why in sources.items():
        listing = list_directory(directory, host_root)
        listing["listed_because"] = why
        listing["texts_for"] = list(DROPIN_TEXT_SUFFIXES)
        for entry in listing["entries"]:
            path = os.path.join(directory, entry["name"])
            if not entry["is_file"] or not entry["name"].endswith(DROPIN_TEXT_SUFFIXES) or path in reached:
                continue
            if texts_read < MAX_CONFIG_FILES:
                texts_read += 1
                read = read_text_file(host_path(host_root, path))
                entry["text"], entry["text_error"] = read["text"], read["error"]
            else:
                entry["text"], entry["text_error"] = None, "not read: more than %d unloaded drop-in files" % MAX_CONFIG_FILES
        listings.append(listing)
    return listings
