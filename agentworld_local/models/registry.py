"""The model registry: named models and their GGUF quantizations (`models.toml`).

The packaged `models.toml` is merged with the user's file (`<config dir>/models.toml`):
a user entry with a packaged name is merged over it (its fields replace the packaged
ones, its quants are merged by quant name); other user entries add models.
`awl models add` writes the user file; `awl models rm` edits it.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import tomli_w

from agentworld_local import paths
from agentworld_local.errors import AwlError, InputError, ModelError
from agentworld_local.files import read_text, writing_whole
from agentworld_local.models.gguf_file import check_gguf_path
from agentworld_local.safe_parse import SyntaxProblem, load_toml

#: The newest registry format this code reads and the one it writes.
REGISTRY_VERSION = 1
USER_FILE_NAME = "models.toml"
#: Names are what users type after `--model`: no `:` (it separates the quant), no path separators.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
#: A Hugging Face repo id: `namespace/name` (or a legacy bare `name`).
_REPO = re.compile(r"^(?:[A-Za-z0-9][\w.-]*/)?[A-Za-z0-9][\w.-]*$")
#: The quantization label inside a GGUF file name, e.g. `UD-Q4_K_M`, `Q8_0`, `IQ2_XXS`, `BF16`.
_QUANT_IN_FILE = re.compile(r"((?:UD-)?(?:I?Q\d(?:_[A-Z0-9]+)*|BF16|F16|F32))(?=\.gguf$|[-.])", re.IGNORECASE)


@dataclass(frozen=True)
class ModelChoice:
    """One concrete GGUF file: a named model at one quantization."""

    name: str
    quant: str
    repo: str  # Hugging Face repo id; "" for a file that only exists locally
    filename: str
    size: int | None  # exact bytes, when known
    sha256: str | None
    context_length: int | None
    sampling: dict
    license: str
    notes: str
    verified: bool  # the file name and size were checked (False: an unchecked guess, see the notes)
    local_file: Path | None  # a file the user registered with `awl models add`
    revision: str = "main"
    approx_size: int | None = None  # an estimate, when the exact size is not known
    is_default: bool = False
    title: str = ""
    unverified: tuple[str, ...] = ()  # model-level facts (license, sampling, ...) nobody checked
    source: str = "packaged"  # "packaged", "user", or "packaged+user"
    # Trained to predict environment observations (True), a general model (False), or not said (None).
    world_model: bool | None = None

    @property
    def spec(self) -> str:
        """What to pass to `--model` for exactly this file."""
        return f"{self.name}:{self.quant}"

    @property
    def expected_size(self) -> int | None:
        return self.size if self.size is not None else self.approx_size


@dataclass(frozen=True)
class ModelEntry:
    """A named model with all its quantizations."""

    name: str
    default_quant: str
    choices: tuple[ModelChoice, ...]

    def quants(self) -> list[str]:
        return [choice.quant for choice in self.choices]


@dataclass
class Registry:
    entries: dict[str, ModelEntry] = field(default_factory=dict)
    user_file: Path | None = None

    def names(self) -> list[str]:
        return sorted(self.entries)

    def models(self) -> list[ModelEntry]:
        return [self.entries[name] for name in self.names()]

    def choices(self) -> list[ModelChoice]:
        return [choice for entry in self.models() for choice in entry.choices]

    def entry(self, name: str) -> ModelEntry:
        """The model called `name` (case-insensitive), or an InputError suggesting close names."""
        if not name.strip():
            raise InputError("The model name is blank.", "Run `awl models list` for the known names, or pass a path to a .gguf file.")
        by_lower = {known.lower(): known for known in self.entries}
        known = by_lower.get(name.lower())
        if known is None:
            close = difflib.get_close_matches(name.lower(), list(by_lower), n=3, cutoff=0.5)
            hint = f"Did you mean {', '.join(by_lower[c] for c in close)}? " if close else ""
            raise InputError(
                f"Unknown model name `{name}`.",
                f"{hint}Run `awl models list` for the known names, or pass a path to a .gguf file.",
            )
        return self.entries[known]

    def find(self, spec: str) -> ModelChoice:
        """Resolve `name` (its default quantization) or `name:QUANT` (case-insensitive)."""
        name, _, quant = spec.strip().partition(":")
        entry = self.entry(name)
        wanted = quant.strip() or entry.default_quant
        for choice in entry.choices:
            if choice.quant.lower() == wanted.lower():
                return choice
        known = ", ".join(q + (" (default)" if q == entry.default_quant else "") for q in entry.quants())
        raise InputError(
            f"`{entry.name}` has no quantization `{wanted}`.",
            f"Known quantizations: {known}. Example: `--model {entry.name}:{entry.default_quant}`.",
        )


# ---------------------------------------------------------------------------- loading


def packaged_registry_file() -> Path:
    return Path(str(resources.files("agentworld_local") / "models.toml"))


def user_registry_file() -> Path:
    return paths.config_dir() / USER_FILE_NAME


def load_registry(user_file: Path | None = None, packaged_file: Path | None = None) -> Registry:
    """The packaged registry merged with the user's file (which may not exist)."""
    packaged = _read_registry_file(packaged_file or packaged_registry_file(), error=ModelError)
    user_path = user_file or user_registry_file()
    user = _read_registry_file(user_path, error=InputError) if user_path.exists() else {}
    registry = Registry(user_file=user_path)
    for name in sorted(set(packaged) | set(user)):
        base, extra = packaged.get(name), user.get(name)
        merged = _merge(base, extra)
        source = "packaged+user" if base and extra else ("user" if extra else "packaged")
        where = user_path if extra else (packaged_file or packaged_registry_file())
        registry.entries[name] = _entry(name, merged, source=source, where=where)
    return registry


#: A registry is a few KB; this only stops a runaway file (or /dev/zero) from being read whole.
_REGISTRY_LIMIT = 4 * 1024 * 1024


def _parse_registry_text(path: Path, error: type[AwlError]) -> dict[str, Any]:
    text = read_text(path, "model registry", limit=_REGISTRY_LIMIT, error=error)
    try:
        return load_toml(text)
    except SyntaxProblem as problem:
        raise error(
            f"{path} is not valid TOML ({problem.reason}).",
            "Fix the file, or delete it and re-add your models with `awl models add`.",
        ) from None


def _read_registry_file(path: Path, *, error: type[AwlError]) -> dict[str, dict]:
    data = _parse_registry_text(path, error)
    version = data.get("version")
    if not isinstance(version, int):
        raise error(f"{path} has no `version` key.", f"Add `version = {REGISTRY_VERSION}` at the top of the file.")
    if version > REGISTRY_VERSION:
        raise error(
            f"{path} uses registry format version {version}; this awl reads version {REGISTRY_VERSION}.",
            "Upgrade awl: `pip install -U agentworld-local`.",
        )
    models = data.get("models", {})
    if not isinstance(models, dict) or not all(isinstance(v, dict) for v in models.values()):
        raise error(f"{path}: `models` must be a table of `[models.NAME]` tables.", "See the packaged models.toml for the format.")
    for name in models:
        if not _NAME.match(name):
            raise error(f"{path}: `{name}` is not a valid model name.", "Use letters, digits, `.`, `_` and `-` only.")
    return models


def _merge(base: dict | None, extra: dict | None) -> dict:
    merged = dict(base or {})
    for key, value in (extra or {}).items():
        if key == "quants" and isinstance(value, dict):
            quants = dict(merged.get("quants", {}))
            for quant, fields in value.items():
                # A quant that is not a table is kept as it is, for _entry to refuse in words.
                quants[quant] = {**quants.get(quant, {}), **fields} if isinstance(fields, dict) else fields
            merged["quants"] = quants
        else:
            merged[key] = value
    return merged


#: The type each field must have, with the words an error uses for it.
_MODEL_FIELDS = {
    "title": (str, "a string"), "repo": (str, "a string"), "revision": (str, "a string"),
    "default_quant": (str, "a string"), "license": (str, "a string"), "notes": (str, "a string"),
    "context_length": (int, "a whole number"), "sampling": (dict, "a table"),
    "unverified": (list, "a list of strings"), "world_model": (bool, "true or false"), "verified": (bool, "true or false"),
}
_QUANT_FIELDS = {
    "file": (str, "a string"), "local_file": (str, "a string"), "revision": (str, "a string"),
    "notes": (str, "a string"), "sha256": (str, "a string"), "size": (int, "a whole number"),
    "approx_size": (int, "a whole number"), "verified": (bool, "true or false"),
}


def _wrong_type(fields: dict, expected: dict[str, tuple[type, str]]) -> str | None:
    """The first field of the wrong type, said in words (`context_length` must be a whole number)."""
    for key, (kind, words) in expected.items():
        value = fields.get(key)
        wrong = value is not None and (not isinstance(value, kind) or (kind is int and isinstance(value, bool)))
        if wrong or (key == "unverified" and value is not None and not all(isinstance(v, str) for v in value)):
            return f"`{key}` must be {words}"
    return None


def _entry(name: str, data: dict, *, source: str, where: Path) -> ModelEntry:
    def bad(message: str) -> InputError:
        return InputError(f"{where}: model `{name}`: {message}.", "Fix the entry (see the packaged models.toml for the format).")

    quants = data.get("quants")
    if not isinstance(quants, dict) or not quants or not all(isinstance(f, dict) for f in quants.values()):
        raise bad("no `[models.NAME.quants.QUANT]` tables")
    problem = _wrong_type(data, _MODEL_FIELDS)
    if problem:
        raise bad(problem)
    repo = data.get("repo")
    if repo is not None and (not _REPO.match(repo) or ".." in repo or "--" in repo):
        raise bad(f"`repo = \"{repo}\"` is not a Hugging Face repo id like `namespace/name`")
    default = data.get("default_quant") or next(iter(quants))
    if default not in quants:
        raise bad(f"default_quant `{default}` is not one of its quants ({', '.join(quants)})")
    choices = []
    for quant, fields in quants.items():
        problem = _wrong_type(fields, _QUANT_FIELDS)
        if problem:
            raise bad(f"quant `{quant}`: {problem}")
        local = fields.get("local_file")
        if not fields.get("file") and not local:
            raise bad(f"quant `{quant}` has neither `file` nor `local_file`")
        remote_name = fields.get("file", "")
        if remote_name.startswith("/") or "\\" in remote_name or ".." in remote_name.split("/"):
            raise bad(f"quant `{quant}`: `file` must be a path inside the repo, not `{remote_name}`")
        if not repo and not local:
            raise bad(f"quant `{quant}` has no `local_file` and the model has no `repo` to download it from")
        choices.append(
            ModelChoice(
                name=name,
                quant=quant,
                repo=repo or "",
                filename=fields.get("file") or Path(local).name,
                size=fields.get("size"),
                sha256=fields["sha256"].lower() if fields.get("sha256") else None,
                context_length=data.get("context_length"),
                sampling=dict(data.get("sampling", {})),
                license=data.get("license", ""),
                notes=fields.get("notes") or data.get("notes", ""),
                verified=fields.get("verified", data.get("verified", False)),
                local_file=Path(local).expanduser() if local else None,
                revision=fields.get("revision") or data.get("revision") or "main",
                approx_size=fields.get("approx_size"),
                is_default=quant == default,
                title=data.get("title", name),
                unverified=tuple(data.get("unverified", ())),
                source=source,
                world_model=data.get("world_model"),
            )
        )
    return ModelEntry(name=name, default_quant=default, choices=tuple(choices))


# ---------------------------------------------------------------------------- the user file


def guess_quant(filename: str) -> str | None:
    """The quantization label in a GGUF file name (`Foo-UD-Q4_K_M.gguf` -> `UD-Q4_K_M`), if any."""
    found = _QUANT_IN_FILE.findall(filename)
    return found[-1].upper() if found else None


def add_local_file(spec: str, path: str | Path, registry: Registry | None = None, *, force: bool = False) -> ModelChoice:
    """Register a GGUF the user already has under `spec` (`name` or `name:QUANT`) in the user file.

    A known name (and quant) gets the file as its local copy; a new name becomes a new entry.
    A name that already points to another file that still exists is re-pointed only with `force`:
    a typo must not silently replace a registered model.
    """
    name, _, quant = spec.strip().partition(":")
    name = name.strip()
    if not name:
        raise InputError("The model name is blank.", "Give the name to register the file under, e.g. `awl models add my-world PATH`.")
    if not _NAME.match(name):
        raise InputError(f"`{name}` is not a valid model name.", "Use letters, digits, `.`, `_` and `-` only, e.g. `my-world-model`.")
    file = check_gguf_path(path).resolve()
    size = file.stat().st_size
    registry = registry or load_registry()
    known = {n.lower(): n for n in registry.entries}.get(name.lower())
    user_file = registry.user_file or user_registry_file()
    data = _read_user_data(user_file)
    models = data.setdefault("models", {})
    if known is not None:
        # `name` alone: the quant in the file name if there is one, else the default quant.
        entry = registry.entry(known)
        wanted = _quant_name(quant.strip() or guess_quant(file.name) or entry.default_quant)
        quant = next((q for q in entry.quants() if q.lower() == wanted.lower()), wanted)
        if quant in entry.quants() and not force:
            _refuse_repointing(registry.find(f"{known}:{quant}"), file)
        fields = models.setdefault(known, {}).setdefault("quants", {}).setdefault(quant, {})
        # A quant the packaged registry describes keeps its hub facts; one the user file describes
        # (a new quant, or one an earlier `add` wrote) now describes this file.
        describes_file = quant not in entry.quants() or "file" in fields
        fields["local_file"] = str(file)
        if describes_file:
            fields.update(file=file.name, size=size, verified=True)
        name = known
    else:
        quant = _quant_name(quant.strip() or guess_quant(file.name) or "local")
        models[name] = {
            "title": name,
            "default_quant": quant,
            "notes": f"Added with `awl models add` from {file}.",
            "quants": {quant: {"file": file.name, "local_file": str(file), "size": size, "verified": True}},
        }
    _write_user_data(user_file, data)
    return load_registry(user_file=user_file).find(f"{name}:{quant}")


def _quant_name(quant: str) -> str:
    if not _NAME.match(quant):
        raise InputError(f"`{quant}` is not a valid quantization name.", "Use letters, digits, `.`, `_` and `-`, e.g. `Q6_K`.")
    return quant


def _refuse_repointing(existing: ModelChoice, file: Path) -> None:
    """An InputError when `existing` already has another local file that is still there."""
    old = existing.local_file
    if old is None or old.resolve() == file or not old.exists():
        return
    raise InputError(
        f"`{existing.spec}` already points to {old}.",
        f"To point it to {file} instead, add `--force`; to keep both, pick a new name "
        f"(e.g. `awl models add {existing.name}-2 {file}`).",
    )


def remove_user_entry(choice: ModelChoice, *, whole_model: bool, user_file: Path | None = None) -> bool:
    """Forget what the user file says about `choice` (its local file, or the whole user entry).

    Never deletes the user's own GGUF file. Returns whether the user file changed.
    """
    user_file = user_file or user_registry_file()
    if not user_file.exists():
        return False
    data = _read_user_data(user_file)
    models = data.get("models", {})
    entry = models.get(choice.name)
    if entry is None:
        return False
    quants = entry.get("quants", {})
    fields = quants.get(choice.quant)
    if whole_model:
        del models[choice.name]
    elif fields is None or "local_file" not in fields:
        return False
    elif choice.source == "user":
        del quants[choice.quant]  # a user-only quant is nothing without its local file
    else:
        del fields["local_file"]  # a packaged quant stays downloadable
        if not fields:
            del quants[choice.quant]
    if "quants" in entry and not entry["quants"]:
        del entry["quants"]
    if choice.name in models and (not entry or choice.source == "user" and "quants" not in entry):
        del models[choice.name]
    elif entry.get("quants") and entry.get("default_quant") not in entry["quants"] and choice.source == "user":
        entry["default_quant"] = next(iter(entry["quants"]))
    _write_user_data(user_file, data)
    return True


def _read_user_data(user_file: Path) -> dict:
    if not user_file.exists():
        return {"version": REGISTRY_VERSION, "models": {}}
    _read_registry_file(user_file, error=InputError)  # validates the version before we rewrite it
    return _parse_registry_text(user_file, InputError)


def _write_user_data(user_file: Path, data: dict) -> None:
    data["version"] = REGISTRY_VERSION
    ordered = {"version": data["version"], **{k: v for k, v in data.items() if k != "version"}}
    header = "# Your awl models: written by `awl models add` (same format as the packaged models.toml).\n"
    with writing_whole(user_file, overwrite=True) as handle:  # a crash never leaves half a registry
        handle.write((header + tomli_w.dumps(ordered)).encode("utf-8"))
