"""The user's settings file: `<config dir>/config.toml` (`awl doctor` shows the config dir).

    version = 1

    [session]
    prompts = "~/src/Qwen-AgentWorld/prompts"   # a prompt pack for every new session

    [cache]
    prompt_states = "8GB"   # disk for system-prompt states new sessions reuse; "off" for none

    [worlds]
    store = "postgresql://awl:PASSWORD@db-host:5432/awl"   # or a folder; AWL_WORLDS_DIR overrides it

A missing file means no settings. A file awl cannot use is refused with its path and the
fix, never half-read: a typo in a key would otherwise be ignored without a word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld_local import paths
from agentworld_local.errors import InputError, did_you_mean
from agentworld_local.files import read_text, user_path
from agentworld_local.safe_parse import SyntaxProblem, load_toml

CONFIG_FILE_NAME = "config.toml"
CONFIG_VERSION = 1
#: table -> keys it may hold (each a string for now).
KNOWN_KEYS: dict[str, tuple[str, ...]] = {"session": ("prompts",), "cache": ("prompt_states",), "worlds": ("store",)}
_SIZE_UNITS = {"": 1, "b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "kib": 1024, "mib": 1024**2, "gib": 1024**3}


@dataclass(frozen=True)
class UserConfig:
    """The settings a config file gave; None where it gave none."""

    #: A prompt pack for new sessions (`--prompts` overrides it).
    prompts: Path | None = None
    #: Bytes of disk for cached system-prompt states; 0 turns the cache off, None: the default.
    prompt_states: int | None = None
    #: Where shared worlds are kept: a folder, or a `postgresql://` URL (worlds/names.py).
    worlds_store: str | None = None
    source: Path | None = None  # the file they came from


def config_path() -> Path:
    return paths.config_dir() / CONFIG_FILE_NAME


def load_config(path: Path | None = None) -> UserConfig:
    path = path or config_path()
    if not path.exists():
        return UserConfig()
    try:
        data = load_toml(read_text(path, "config file"))
    except SyntaxProblem as problem:
        raise _error(path, f"is not valid TOML ({problem.reason})", "Fix the file or move it away.") from None
    version = data.get("version")
    if version != CONFIG_VERSION:
        raise _error(path, f"has `version = {version!r}`; this awl reads version {CONFIG_VERSION}",
                     f"Write `version = {CONFIG_VERSION}` at the top of the file.")
    session = _table(path, data)
    prompts = session.get("prompts")
    if prompts is not None and (not isinstance(prompts, str) or not prompts.strip()):
        raise _error(path, "has a `session.prompts` that is not a directory path", 'Write e.g. `prompts = "~/prompts"`.')
    states = data.get("cache", {}).get("prompt_states")
    store = data.get("worlds", {}).get("store")
    if store is not None and (not isinstance(store, str) or not store.strip()):
        raise _error(path, "has a `worlds.store` that is neither a folder nor a database URL",
                     'Write e.g. `store = "~/worlds"` or `store = "postgresql://awl:PASSWORD@db-host:5432/awl"`.')
    if store is not None and "://" not in store:
        store = str(_path_near(path, store.strip()))
    return UserConfig(prompts=_path_near(path, prompts) if prompts else None,
                      prompt_states=None if states is None else _budget(path, states),
                      worlds_store=store.strip() if store else None, source=path)


def _budget(path: Path, value: Any) -> int:
    """`cache.prompt_states`: "off", or a size such as "8GB" or "500 MiB"."""
    text = str(value).strip().lower().replace(" ", "") if isinstance(value, str) else ""
    if text in ("off", "0"):
        return 0
    match = re.fullmatch(r"([0-9]{1,9}(?:\.[0-9]{1,9})?)([a-z]*)", text)
    if match is None or match.group(2) not in _SIZE_UNITS:
        raise _error(path, f"has a `cache.prompt_states` of {value!r}",
                     'Write a size such as `prompt_states = "8GB"`, or `"off"`.')
    return int(float(match.group(1)) * _SIZE_UNITS[match.group(2)])


def _table(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    """The `[session]` table, after checking that every key is one awl knows."""
    for key, value in data.items():
        if key == "version":
            continue
        if key not in KNOWN_KEYS or not isinstance(value, dict):
            raise _error(path, f"has an unknown setting `{key}`",
                         f"{did_you_mean(key, KNOWN_KEYS)} Settings go in a table: {', '.join(f'[{name}]' for name in KNOWN_KEYS)}.".lstrip())
        for inner in value:
            if inner not in KNOWN_KEYS[key]:
                raise _error(path, f"has an unknown setting `{key}.{inner}`",
                             f"{did_you_mean(inner, KNOWN_KEYS[key])} [{key}] takes: {', '.join(KNOWN_KEYS[key])}.".lstrip())
    return data.get("session", {})


def _path_near(config: Path, text: str) -> Path:
    """`~` is the home directory; a relative path is read from the config file's folder."""
    path = user_path(text)
    return path if path.is_absolute() else config.parent / path


def _error(path: Path, problem: str, hint: str) -> InputError:
    return InputError(f"The config file {path} {problem}.", hint)
