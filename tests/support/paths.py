"""Where things are, for every test."""
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
COLLECTIONS_ROOT = REPO_ROOT / ".collections"
# Real containerd outputs from releases that cannot be installed here (read-only, beside the repo).
SHARED_FIXTURES = REPO_ROOT.parent / "shared" / "fixtures" / "containerd"
