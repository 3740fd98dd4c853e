"""Cheap facts about a GGUF file, without loading it: is it one, and what is its identity."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from agentworld_local.errors import ModelError
from agentworld_local.files import check_name_length, check_regular_file, user_path

GGUF_MAGIC = b"GGUF"
#: The identity hash covers the header block (metadata + tensor index + first weights):
#: hashing a 20 GB file at every start would cost minutes.
IDENTITY_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class FileIdentity:
    path: Path
    size: int
    sha256: str
    scope: str  # "file" when the file fits in IDENTITY_BYTES, else "first-8MiB"


def check_gguf_path(path: str | Path) -> Path:
    """Raise a ModelError with a next step unless `path` is a readable GGUF file."""
    if not str(path).strip():
        raise ModelError("The model path is blank.", "Give the path of a .gguf file.")
    file = user_path(path, ModelError)
    check_name_length(file, "model file", ModelError)
    if not file.exists():
        raise ModelError(
            f"Model file not found: {file}.",
            "Check the path, or pass a GGUF you have downloaded with `--model PATH`.",
        )
    if file.is_dir():
        raise ModelError(f"{file} is a directory, not a GGUF file.", "Pass the .gguf file inside it with `--model`.")
    check_regular_file(file, "model file", ModelError)  # a FIFO would block the read below forever
    try:
        with file.open("rb") as handle:
            magic = handle.read(4)
    except OSError as error:
        raise ModelError(f"Cannot read {file} ({error.strerror}).", "Check the file's permissions.") from None
    if magic != GGUF_MAGIC:
        raise ModelError(
            f"{file} is not a GGUF file (it does not start with the GGUF magic bytes).",
            "awl runs llama.cpp models in GGUF format; download a .gguf quantization of the model.",
        )
    return file


def file_identity(path: Path) -> FileIdentity:
    size = path.stat().st_size
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        digest.update(handle.read(IDENTITY_BYTES))
    scope = "file" if size <= IDENTITY_BYTES else "first-8MiB"
    return FileIdentity(path=path, size=size, sha256=digest.hexdigest(), scope=scope)
