"""Prompt packs: a directory of system prompt templates laid out like the official `prompts/`.

A pack holds `<domain>/system_prompt.txt` for some or all domains, with the placeholders
`{tool_definitions}` and `{demonstrations}` that the session fills. A user with a checkout
of the official repository passes its `prompts/` folder and the model sees its training
prompts verbatim; awl ships no copy of them. Our own templates (domains/templates/) are
filled by the same function, so a built-in prompt and a pack prompt differ only in text.

The pack's identity (its path and the sha256 of each file) goes into the trajectory
header, so a saved session says exactly which prompt the model read.
"""

from __future__ import annotations

import hashlib
import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld_local.domains.skeletons import PLACEHOLDERS, placeholders_in
from agentworld_local.errors import InputError
from agentworld_local.files import check_name_length, read_bytes, user_path

FILE_NAME = "system_prompt.txt"
#: A system prompt far longer than any real one is a wrong file, not a prompt.
MAX_TEMPLATE_BYTES = 2 * 1024 * 1024
PACK_HINT = "A prompt pack is a directory with one `<domain>/system_prompt.txt` per domain, like the official `prompts/` folder."


def builtin_template(domain: str) -> str:
    """Our own template for `domain` (domains/templates/<domain>.py)."""
    return importlib.import_module(f"agentworld_local.domains.templates.{domain}").TEMPLATE


def fill_template(template: str, *, tool_definitions: str = "", demonstrations: str = "") -> str:
    """The template with its placeholders filled.

    Only the two known names are replaced, never with `str.format`: the official
    templates hold literal JSON braces (`{"url": ...}`) that format would choke on.
    """
    text = template.replace("{tool_definitions}", tool_definitions.strip("\n"))
    return text.replace("{demonstrations}", demonstrations.strip("\n"))


def unknown_placeholders(template: str) -> list[str]:
    return [name for name in placeholders_in(template) if name not in PLACEHOLDERS]


@dataclass(frozen=True)
class PromptPack:
    """The templates read from one pack directory, with what identifies them."""

    root: Path
    templates: dict[str, str]
    #: "<domain>/system_prompt.txt" -> sha256 of the file's bytes
    hashes: dict[str, str] = field(default_factory=dict)

    def identity(self, domain: str | None = None) -> dict[str, Any]:
        """What the trajectory header records: the pack's path and the hash of each file
        (only `domain`'s file when a domain is named: the one the session read)."""
        files = {key: value for key, value in self.hashes.items() if domain is None or key.split("/")[0] == domain}
        return {"path": str(self.root), "files": files}

    def template(self, domain: str) -> str:
        if domain not in self.templates:
            raise InputError(
                f"The prompt pack {self.root} has no {domain}/{FILE_NAME}.",
                f"Add {self.root / domain / FILE_NAME}, or run without --prompts to use awl's own {domain} prompt.",
            )
        return self.templates[domain]

    def system_prompt(self, domain: Any, *, demonstrations: str = "") -> str:
        """The pack's prompt for a domain object, filled with that domain's tools."""
        return fill_template(
            self.template(domain.name),
            tool_definitions=domain.tool_definitions() if domain.takes_tools else "",
            demonstrations=demonstrations,
        )


def _decode(data: bytes, path: Path) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as problem:
        raise InputError(
            f"The prompt template {path} is not UTF-8 text (byte {problem.start + 1} is 0x{data[problem.start]:02x}).",
            "Save it as UTF-8.",
        ) from None


def load_pack(path: str | Path, domain: str | None = None) -> PromptPack:
    """Read and check the pack at `path`; with `domain`, that domain's file must be there.

    Every template of a known domain that the directory holds is read and checked (a
    placeholder other than `{tool_definitions}` and `{demonstrations}` is refused: it
    would reach the model as literal text). Raises InputError, never OSError.
    """
    from agentworld_local.domains import domain_names  # the registry imports this package

    root = user_path(path)
    check_name_length(root, "prompt pack")  # a name no file system holds fails every call below
    if not root.is_dir():
        problem = "does not exist" if not root.exists() else "is not a directory"
        raise InputError(f"The prompt pack {root} {problem}.", PACK_HINT)
    templates: dict[str, str] = {}
    hashes: dict[str, str] = {}
    for name in domain_names():
        file = root / name / FILE_NAME
        if not file.exists() and not file.is_symlink():
            continue
        data = read_bytes(file, "prompt template", limit=MAX_TEMPLATE_BYTES)
        text = _decode(data, file)
        unknown = unknown_placeholders(text)
        if unknown:
            raise InputError(
                f"The prompt template {file} has an unknown placeholder {{{unknown[0]}}}.",
                "Placeholders awl fills: {tool_definitions}, {demonstrations}; write other braces as they should reach the model.",
            )
        if not text.strip():
            raise InputError(f"The prompt template {file} is empty.", "Write the system prompt into it, or remove it.")
        templates[name] = text
        hashes[f"{name}/{FILE_NAME}"] = hashlib.sha256(data).hexdigest()
    if not templates:
        raise InputError(f"The prompt pack {root} holds no <domain>/{FILE_NAME}.", PACK_HINT)
    pack = PromptPack(root=root.resolve(), templates=templates, hashes=hashes)
    if domain is not None:
        pack.template(domain)  # a clear error now rather than at the first turn
    return pack


def prompt_from_pack(path: str | Path, domain: Any, *, demonstrations: str = "") -> tuple[str, dict[str, Any]]:
    """The system prompt the pack at `path` gives `domain` (a domain object, already built
    with the session's tools), and the pack identity for the trajectory header.

    A session puts the text in `SessionSettings.system_prompt` and the identity in
    `Header.prompt_pack`; a resumed session reads the prompt back from its header.
    """
    pack = load_pack(path, domain.name)
    return pack.system_prompt(domain, demonstrations=demonstrations), pack.identity(domain.name)
