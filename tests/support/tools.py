"""Real binaries the tests need. Absent locally: the test skips and says why. Absent under CI (env
``CI`` set): the test FAILS — a CI run that silently skips its integration tests proves nothing.

Under `make check` (env ``RUNTIME_GATE_CHECK`` set) a test that asks for any of them fails, present or not: `make
check` selects only tests that need no component, system package or root (``-m "not components"``), and a test that
does must carry the ``components`` marker (pytest.ini) so that only `make test` runs it."""
import os
import shutil

import pytest

CHECK_ENV = "RUNTIME_GATE_CHECK"


def require_tool(present, message):
    if os.environ.get(CHECK_ENV):
        pytest.fail(f"`make check` runs no test that needs a component, but this one does ({message}): "
                    "mark it @pytest.mark.components (pytest.ini), `make test` runs it", pytrace=False)
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
