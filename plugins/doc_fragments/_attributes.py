# Copyright: gpufleet platform team
# Apache License 2.0 (see galaxy.yml)
"""What each module promises about check mode, diff mode and idempotence: one text for every module."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # Standard attribute documentation; a module adds its own `check_mode`/`diff_mode` support level.
    DOCUMENTATION = r"""
options: {}
attributes:
    check_mode:
        description: Runs in C(check_mode) and reports what it would change without changing anything.
    diff_mode:
        description: In C(--diff) mode, shows what changed (or would change in C(check_mode)) as before and after.
    idempotent:
        description:
            - A second run with the same arguments reports no change, unless the node or cluster changed in between.
"""

    # Modules that only read: use together with the standard fragment.
    INFO_MODULE = r"""
options: {}
attributes:
    check_mode:
        support: full
        details:
            - Reads only; changes nothing.
    diff_mode:
        support: N/A
        details:
            - Reads only; changes nothing.
    idempotent:
        support: full
"""
