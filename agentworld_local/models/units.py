"""Byte counts for people: decimal units for files (as the hub shows them), binary units
for memory (as llama.cpp and nvidia-smi report it)."""

from __future__ import annotations


def _human(n: int | float | None, step: int, units: tuple[str, ...]) -> str:
    if n is None:
        return "?"
    value = float(n)
    for unit in units:
        if abs(value) < step or unit == units[-1]:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= step
    raise AssertionError("unreachable: the last unit always returns")


def format_size(size: int | None) -> str:
    """22134529280 -> '22.1 GB'."""
    return _human(size, 1000, ("B", "KB", "MB", "GB", "TB"))


def format_bytes(n: int | float | None) -> str:
    """1536 -> '1.5 KiB'."""
    return _human(n, 1024, ("B", "KiB", "MiB", "GiB"))
