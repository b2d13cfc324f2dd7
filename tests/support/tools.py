"""Real binaries the tests need. Absent locally: the test skips and says why. Absent under CI (env
``CI`` set): the test FAILS — a CI run that silently skips its integration tests proves nothing."""
import os
import shutil

import pytest


def require_tool(present, message):
    if present:
        return
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def require_command(command, package):
    """The path of ``command``, or fail/skip naming the Debian ``package`` that provides it."""
    found = shutil.which(command)
    require_tool(found is not None, f"{command} is not installed: run `make test` (installs it) or apt-get install {package}")
    return found
