# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""The proof's node half (containerd_runtime_config_probe, ``mode: validate``): the candidate tree written into a
fresh temporary directory, dumped by the real binary, its import patterns expanded there, the directory removed.

``PLACEHOLDER`` stands for that directory in the paths and texts the controller sends (``_change/proof.candidate_tree``
writes it, this file replaces it); the answer carries it again in place of the directory. Nothing outside the
temporary directory is written.

Runs on nodes: standard library only, Python 3.8 syntax. The controller imports ``PLACEHOLDER`` from here.
"""

from __future__ import absolute_import, division, print_function

import os
import shutil
import tempfile

from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.base_specs import base_runtime_specs
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.config_tree import containerd_version, run_containerd
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.imports import imports_loaded

__metaclass__ = type

PLACEHOLDER = "@@CANDIDATE@@"


def dump_candidate(params, binary):
    """``(evidence, error)`` for the probe's ``mode: validate`` options ``params``: ``{"globs", "glob_errors", "dump",
    "base_runtime_specs"}``, paths with ``PLACEHOLDER`` again."""
    tmp = tempfile.mkdtemp(prefix="gpufleet-candidate-")
    try:
        def place(path):
            real = path.replace(PLACEHOLDER, tmp)
            os.makedirs(os.path.dirname(real), exist_ok=True)
            return real

        for destination, source in params["copy_files"].items():
            shutil.copyfile(source, place(destination))
        for destination, text in params["files"].items():
            with open(place(destination), "w") as handle:
                handle.write(text.replace(PLACEHOLDER, tmp))
        config_path = params["config_path"].replace(PLACEHOLDER, tmp)
        patterns = [pattern.replace(PLACEHOLDER, tmp) for pattern in params["patterns"]]
        globs, glob_errors = imports_loaded(patterns, config_path, containerd_version(binary, params["timeout"])[1])
        dump = run_containerd([binary, "--config", config_path, "config", "dump"], params["timeout"])
    except (OSError, IOError) as error:
        return None, "cannot build the candidate tree in %s: %s" % (tmp, getattr(error, "strerror", None) or error)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    # Paths are returned with the placeholder again, so the controller compares them with its plan.
    globs = dict((k.replace(tmp, PLACEHOLDER), [p.replace(tmp, PLACEHOLDER) for p in v]) for k, v in globs.items())
    dump["stdout"] = dump["stdout"].replace(tmp, PLACEHOLDER)
    # The CRI plugin opens each base_runtime_spec when it starts: the files the candidate names, as they are on the node.
    return {"globs": globs, "glob_errors": glob_errors, "dump": dump,
            "base_runtime_specs": base_runtime_specs(dump["stdout"]) if dump["rc"] == 0 else {}}, None
