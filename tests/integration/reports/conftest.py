"""Fixtures of the report tests (defined in reports_support, next to the helpers they use)."""
from reports_support import chromium, demo_run  # noqa: F401  # pylint: disable=unused-import
