"""Writing small file trees for tests."""
from pathlib import Path


def write_files(base: Path, files: dict, placeholder: str = "{tree}") -> Path:
    """Write ``{relative path: text}`` under ``base`` (directories made as needed); ``placeholder`` in a text becomes
    ``base``'s absolute path. Returns ``base``."""
    base.mkdir(parents=True, exist_ok=True)
    for relative, text in files.items():
        path = base / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace(placeholder, str(base)), encoding="utf-8")
    return base
