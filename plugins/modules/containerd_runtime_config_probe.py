#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)

DOCUMENTATION = r"""
---
module: containerd_runtime_config_probe
short_description: "Internal: node side of containerd_runtime_config (read the config tree, or dump a candidate tree)"
description:
  - Internal to the M(gpufleet.runtime_gate.containerd_runtime_config) action, not a module for playbooks; its options
    may change in any release.
  - With O(mode=gather), reads what the M(gpufleet.runtime_gate.containerd_runtime_config) action plans from
    C(containerd --version), the root configuration's text, the Go C(filepath.Glob) expansion of its top-level
    C(imports) (and of O(patterns)), the text of every file they match, the current C(config dump), and whether the
    directories that would be written are writable.
  - With O(mode=validate), writes O(files) into a fresh temporary directory (the placeholder C(@@CANDIDATE@@) in
    paths and texts is that directory), copies O(copy_files) there, runs the real
    C(<containerd_bin> --config <candidate root> config dump) from working directory C(/), expands O(patterns) in
    the candidate tree, returns the output and removes the directory. Nothing outside the temporary directory is
    written.
  - Standard library only (Python 3.8 or later). Normally called by the action plugin, not from playbooks.
version_added: 0.2.0
author:
  - gpufleet platform team (@gpufleet)
extends_documentation_fragment:
  - gpufleet.runtime_gate._attributes
options:
  mode:
    description:
      - C(gather) reads the node; C(validate) dumps a candidate tree in a temporary directory.
    type: str
    choices: [gather, validate]
    required: true
  containerd_bin:
    description:
      - The containerd binary, a name looked up in E(PATH) or an absolute path.
    type: str
    default: containerd
  config_path:
    description:
      - The root configuration file (O(mode=gather)), or its path inside the candidate tree (O(mode=validate)).
    type: str
    default: /etc/containerd/config.toml
  patterns:
    description:
      - Further import patterns to expand with Go C(filepath.Glob) rules.
    type: list
    elements: str
    default: []
  write_paths:
    description:
      - Paths that would be written (O(mode=gather)); each is reported with whether it or its nearest existing
        parent directory is writable.
    type: list
    elements: str
    default: []
  binaries:
    description:
      - O(mode=gather) only. Runtime binaries (C(BinaryName)) to look for, absolute paths or names looked up in E(PATH).
    type: list
    elements: str
    default: []
  list_dirs:
    description:
      - O(mode=gather) only. Directories whose entry names are returned in RV(listings) (the role's backup directory).
    type: list
    elements: str
    default: []
  files:
    description:
      - O(mode=validate) only. Candidate files, path to text.
    type: dict
    default: {}
  copy_files:
    description:
      - O(mode=validate) only. Existing files to copy into the candidate tree, destination path to source path.
    type: dict
    default: {}
  timeout:
    description:
      - Seconds each containerd command may take.
    type: int
    default: 60
attributes:
  check_mode:
    support: full
    description: Writes only a temporary directory that it removes again, so check mode runs it unchanged.
  diff_mode:
    support: none
    description: Changes nothing that could be diffed.
  idempotent:
    support: full
    description: Leaves the node as it found it.
notes:
  - Globs follow Go C(filepath.Glob) (sorted, C(*) never crosses C(/)), as containerd expands C(imports).
  - A relative import glob is resolved as the node's containerd does (C(containerd --version)), from C(/) on
    1.6.0-1.6.28 and 1.7.0-1.7.15, from the configuration file's directory otherwise.
seealso:
  - module: gpufleet.runtime_gate.containerd_runtime_config
"""

EXAMPLES = r"""
- name: Read a node's containerd config tree
  gpufleet.runtime_gate.containerd_runtime_config_probe:
    mode: gather
    patterns: ["/etc/containerd/conf.d/*.toml"]
"""

RETURN = r"""
version_text:
  description: Output of C(containerd --version); null when it failed (see RV(version_error)).
  returned: O(mode=gather)
  type: str
version_error:
  description: Why C(containerd --version) failed (its stderr, or its exit status); null when it succeeded.
  returned: O(mode=gather)
  type: str
root_text:
  description: Text of the root configuration; null when it does not exist.
  returned: O(mode=gather)
  type: str
root_imports:
  description: The root's top-level C(imports) as read on the node; null when absent or unreadable.
  returned: O(mode=gather)
  type: list
  elements: str
root_imports_error:
  description: Why the root's top-level C(imports) could not be read; null when it was read, absent or the root does not exist.
  returned: O(mode=gather)
  type: str
globs:
  description: Each expanded pattern mapped to its sorted matches.
  returned: always
  type: dict
glob_errors:
  description:
    - One message per pattern of the candidate tree that cannot be expanded as containerd would (O(mode=validate));
      empty when every pattern expanded. In O(mode=gather) such a pattern fails the task instead.
  returned: O(mode=validate)
  type: list
  elements: str
texts:
  description: Text of every file a pattern matched (O(mode=gather)).
  returned: O(mode=gather)
  type: dict
dump:
  description: C(rc), C(stdout), C(stderr) of the C(config dump) run; null when the root does not exist.
  returned: always
  type: dict
base_runtime_specs:
  description:
    - For each C(base_runtime_spec) the candidate's C(config dump) names, C(state) (C(ok), C(missing), C(invalid) or
      C(unchecked)) and C(detail). The CRI plugin opens and decodes each one when it starts.
  returned: O(mode=validate)
  type: dict
stats:
  description: C(mode) (octal string), C(uid) and C(gid) of the root, every matched file, every O(write_paths) entry and
    its directory; null for a path that does not exist.
  returned: O(mode=gather)
  type: dict
listings:
  description: For each of O(list_dirs), the sorted entry names; null when the directory does not exist.
  returned: O(mode=gather)
  type: dict
binaries:
  description: For each of O(binaries), null when it is an executable file, else why not.
  returned: O(mode=gather)
  type: dict
writable:
  description: For each of O(write_paths), null when writable, else why not.
  returned: O(mode=gather)
  type: dict
realpaths:
  description: Each path of RV(stats) and the root's directory with every symbolic link resolved (C(os.path.realpath)).
  returned: O(mode=gather)
  type: dict
"""

import os
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.base_specs import base_runtime_specs
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.containerd_release import (
    parse_containerd_version,
    parse_version,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.gather import (
    find_executable,
    read_text_file,
    run_command,
)
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.imports import imports_loaded
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._node.toml_imports import read_top_level_imports
from ansible_collections.gpufleet.runtime_gate.plugins.module_utils._specs.containerd_runtime_config_probe import (
    get_containerd_runtime_config_probe_argument_spec,
)

PLACEHOLDER = "@@CANDIDATE@@"
MAX_FILE_BYTES = 4 * 1024 * 1024


def _read(path):
    """(text, error); text None when the file does not exist."""
    entry = read_text_file(path, MAX_FILE_BYTES)
    if entry["error"] == "does not exist":
        return None, None
    return entry["text"], entry["error"] and "%s %s" % (path, entry["error"])


def _run(argv, timeout):
    rc, stdout, stderr, error = run_command(argv, timeout)
    return {"rc": rc, "stdout": stdout.decode("utf-8", "replace"), "stderr": error or stderr}


def _version(binary, timeout):
    """(``containerd --version`` result, the version as a tuple or None)."""
    version = _run([binary, "--version"], timeout)
    return version, parse_version(parse_containerd_version(version["stdout"])) if version["rc"] == 0 else None


def _why_not_writable(path):
    """None when ``path`` can be written (or created), else the reason. access() reports EROFS too."""
    target = path
    while not os.path.lexists(target):
        parent = os.path.dirname(target)
        if parent == target:
            break
        target = parent
    if os.path.exists(path) and os.path.isdir(path):
        target = path
    elif os.path.lexists(path):
        target = os.path.dirname(path) or "/"
    if not os.path.isdir(target):
        return "%s is not a directory" % target
    if not os.access(target, os.W_OK | os.X_OK):
        try:
            read_only = os.statvfs(target).f_flag & os.ST_RDONLY
        except OSError:
            read_only = False
        return "%s is %s" % (target, "on a read-only file system" if read_only else "not writable")
    return None


def _stat(path):
    """``{"mode": "0600", "uid", "gid"}`` of ``path``, or None when it does not exist: written files keep them."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    return {"mode": "%04o" % (status.st_mode & 0o7777), "uid": status.st_uid, "gid": status.st_gid}


def _listing(path):
    try:
        return sorted(os.listdir(path))
    except OSError:
        return None


def gather(module, binary):
    params = module.params
    config_path = params["config_path"]
    version, version_tuple = _version(binary, params["timeout"])
    root_text, root_error = _read(config_path)
    if root_error:
        module.fail_json(msg="root config " + root_error)
    root_imports, imports_error = (None, None) if root_text is None else read_top_level_imports(root_text)
    patterns = list(root_imports or []) + list(params["patterns"])
    globs, glob_errors = imports_loaded(patterns, config_path, version_tuple)
    if glob_errors:
        module.fail_json(msg="; ".join(glob_errors))
    texts = {}
    for paths in list(globs.values()) + [params["write_paths"]]:
        for path in paths:
            if path not in texts and os.path.isfile(path):
                text, error = _read(path)
                if error:
                    module.fail_json(msg="imported file " + error)
                texts[path] = text
    dump = None
    if root_text is not None:
        dump = _run([binary, "--config", config_path, "config", "dump"], params["timeout"])
    stat_paths = [config_path] + list(texts) + list(params["write_paths"])
    stat_paths += [os.path.dirname(path) for path in params["write_paths"]] + list(params["list_dirs"])
    module.exit_json(
        changed=False,
        stats=dict((path, _stat(path)) for path in stat_paths),
        listings=dict((path, _listing(path)) for path in params["list_dirs"]),
        version_text=version["stdout"].strip() if version["rc"] == 0 else None,
        version_error=None if version["rc"] == 0 else version["stderr"] or "exit %s" % version["rc"],
        root_text=root_text,
        root_imports=root_imports,
        root_imports_error=imports_error,
        globs=globs,
        texts=texts,
        dump=dump,
        writable=dict((path, _why_not_writable(path)) for path in params["write_paths"]),
        # Symbolic links resolved: the controller confines every write to the root's real directory.
        realpaths=dict((path, os.path.realpath(path)) for path in stat_paths + [os.path.dirname(config_path)]),
        binaries=dict((name, None if find_executable(name) else "not an executable file on the node") for name in params["binaries"]),
    )


def validate(module, binary):
    params = module.params
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
        globs, glob_errors = imports_loaded(patterns, config_path, _version(binary, params["timeout"])[1])
        dump = _run([binary, "--config", config_path, "config", "dump"], params["timeout"])
    except (OSError, IOError) as error:
        module.fail_json(msg="cannot build the candidate tree in %s: %s" % (tmp, getattr(error, "strerror", None) or error))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    # Paths are returned with the placeholder again, so the controller compares them with its plan.
    globs = dict((k.replace(tmp, PLACEHOLDER), [p.replace(tmp, PLACEHOLDER) for p in v]) for k, v in globs.items())
    dump["stdout"] = dump["stdout"].replace(tmp, PLACEHOLDER)
    # The CRI plugin opens each base_runtime_spec when it starts: the files the candidate names, as they are on the node.
    module.exit_json(changed=False, globs=globs, glob_errors=glob_errors, dump=dump,
                     base_runtime_specs=base_runtime_specs(dump["stdout"]) if dump["rc"] == 0 else {})


def main():
    module = AnsibleModule(**get_containerd_runtime_config_probe_argument_spec())
    binary = find_executable(module.params["containerd_bin"])
    if not binary:
        module.fail_json(msg="containerd binary '%s' was not found (not in PATH or not executable)" % module.params["containerd_bin"])
    if module.params["mode"] == "gather":
        gather(module, binary)
    validate(module, binary)


if __name__ == "__main__":
    main()
