"""On-disk results of sweep points, keyed by the content hash of their inputs and of the code.

One JSON file per finished point (``<digest>.json``), written atomically as soon as the point
finishes, so an interrupted or partly failed sweep keeps every finished point and a re-run only
simulates what is new. Failed points are never stored (a fix to the input re-runs them).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

DEFAULT_DIR_ENV = "FABRICSIM_CACHE"
"""Environment variable naming the cache folder; default ``~/.cache/fabricsim/sweeps``."""


@cache
def code_fingerprint() -> str:
    """Hash of the simulator's own files (its Python and its parts data), so a cached row is used
    only by the code that computed it: the version number alone stays the same across changes of
    the model."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.suffix in (".py", ".yaml", ".yml", ".json") and "__pycache__" not in path.parts:
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def default_dir() -> Path:
    env = os.environ.get(DEFAULT_DIR_ENV)
    return Path(env) if env else Path.home() / ".cache" / "fabricsim" / "sweeps"


class ResultCache:
    """Rows of finished points by digest; ``folder=None`` disables caching."""

    def __init__(self, folder: str | Path | None) -> None:
        self.folder = Path(folder) if folder is not None else None

    def get(self, digest: str) -> list[dict] | None:
        if self.folder is None:
            return None
        path = self.folder / f"{digest}.json"
        try:
            return json.loads(path.read_text())["rows"]
        except (OSError, ValueError, KeyError):
            return None  # absent or unreadable: simulate again

    def put(self, digest: str, rows: list[dict[str, Any]]) -> None:
        if self.folder is None:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump({"rows": rows}, f, default=_plain)
        os.replace(tmp, self.folder / f"{digest}.json")


def _plain(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)
