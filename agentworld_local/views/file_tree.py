"""The file-system view: ask the world for a listing on a throwaway fork, parse it into a tree.

The listing is whatever the world model predicts for a listing action, so the parser is
tolerant: it reads `ls -la`, `ls -R` / `ls -laR`, `find` and `tree` output (mixed with
shell prompts, error lines or an accessibility tree) and ignores what it cannot read.
It never raises on model output: garbage gives an empty tree.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from agentworld_local.domains import domains_with
from agentworld_local.domains.swe import SHELL_TOOL
from agentworld_local.domains.syntax import split_words
from agentworld_local.errors import ActionError, InputError

if TYPE_CHECKING:  # the engine imports domains, not the other way round
    import threading

    from agentworld_local.engine.world import World

FILE_SYSTEM_DOMAINS = tuple(domains_with("shows_file_system"))
DEFAULT_DEPTH = 3

Kind = Literal["dir", "file"]


@dataclass
class FileNode:
    name: str
    kind: Kind = "file"
    size: int | None = None
    children: list[FileNode] = field(default_factory=list)

    def child(self, name: str) -> FileNode | None:
        return next((node for node in self.children if node.name == name), None)

    def walk(self, prefix: str = "") -> Iterator[tuple[str, FileNode]]:
        """(relative path, node) of every descendant, parents before children."""
        for node in self.children:
            path = f"{prefix}{node.name}"
            yield path, node
            yield from node.walk(path + "/")


@dataclass
class FileTree:
    """A listing as nested nodes; `root.name` is the listed path (e.g. `/home/user`)."""

    root: FileNode

    @classmethod
    def empty(cls, path: str = "/") -> FileTree:
        return cls(FileNode(path, "dir"))

    @property
    def is_empty(self) -> bool:
        return not self.root.children

    def paths(self) -> list[str]:
        """Relative paths, directories with a trailing `/`."""
        return [path + "/" if node.kind == "dir" else path for path, node in self.root.walk()]

    def find(self, path: str) -> FileNode | None:
        node: FileNode | None = self.root
        for part in [part for part in path.strip("/").split("/") if part]:
            node = node.child(part) if node else None
        return node


# -- the probe action ---------------------------------------------------------------


def _find_command(path: str, depth: int) -> str:
    # Directories get a trailing slash so that empty ones are still known to be directories.
    return f"find {shlex.quote(path)} -maxdepth {depth} -type d -printf '%p/\\n' -o -print"


def listing_probe(domain_name: str, path: str = "/", depth: int = DEFAULT_DEPTH) -> str:
    """The action text that asks a `domain_name` world for a listing of `path`."""
    if domain_name == "terminal":
        return _find_command(path, depth)
    if domain_name == "swe":
        return json.dumps({"name": SHELL_TOOL, "arguments": {"command": _find_command(path, depth)}})
    if domain_name == "os":
        # Never executed: text the world model reads, printing one path per line like `find`.
        return (
            "import os\n"
            f"root = {path!r}\n"
            "for folder, dirs, files in os.walk(root):\n"
            "    dirs.sort()\n"
            "    for name in dirs:\n"
            "        print(os.path.join(folder, name) + '/')\n"
            "    for name in sorted(files):\n"
            "        print(os.path.join(folder, name))\n"
            "    level = 0 if folder == root else os.path.relpath(folder, root).count(os.sep) + 1\n"
            f"    if level >= {depth - 1}:\n"
            "        dirs.clear()"
        )
    raise InputError(
        f"The {domain_name} domain has no file system to list.",
        f"The file tree works in the {', '.join(FILE_SYSTEM_DOMAINS)} domains.",
    )


def probe_file_tree(
    world: World, path: str = "/", *, depth: int = DEFAULT_DEPTH, cancel: threading.Event | None = None
) -> FileTree:
    """Ask the world for a listing of `path` as a hidden turn (never recorded) and parse it."""
    record = world.probe(listing_probe(world.domain.name, path, depth), cancel)
    if record is None:  # cancelled
        return FileTree.empty(path)
    return parse_listing(record.observation, root=path)


# -- the parser ----------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_PROMPT = re.compile(r"^(?:[\w.-]+@[\w.-]+[: ].*?[$#%]|[$#>])(?:\s|$)")
_NOISE = re.compile(r"^(?:total \d+|\d+ director(?:y|ies)(?:, \d+ files?)?|(?:ls|find|tree|du|stat): .*|Output:)$")
_HUMAN = re.compile(r"^(\d+(?:[.,]\d+)?)([KMGTP]?)i?B?$")
_DATE = r"(?:[A-Z][a-z]{2}\s+\d{1,2}\s+(?:\d{4}|\d{1,2}:\d{2})|\d{1,2}\s+[A-Z][a-z]{2}\s+(?:\d{4}|\d{1,2}:\d{2})|\d{4}-\d{2}-\d{2}(?:\s+\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:\s+[+-]\d{4})?)?)"
_LONG = re.compile(
    r"^(?P<type>[-dlcbps])[rwxsStT-]{9}[.+@]?\s+\d+\s+(?:\S+\s+){0,2}?"
    r"(?P<size>\d+(?:[.,]\d+)?[KMGTP]?|\d+,\s*\d+)\s+" + _DATE + r"\s+(?P<name>.+)$"
)
_TREE = re.compile(r"^(?P<indent>(?:[│|] {2,3}| {4})*)(?:[├└]──|[|`]--)\s(?P<rest>.*)$")
_TREE_INFO = re.compile(r"^\[(?P<info>[^\]]*)\]\s+(?P<name>.+)$")


def _size(text: str) -> int | None:
    match = _HUMAN.match(text.strip())
    if not match:
        return None
    number = float(match.group(1).replace(",", "."))
    return int(number * 1024 ** "_KMGTP".index(match.group(2) or "_"))


class _Builder:
    def __init__(self, root: str) -> None:
        self.root_path = posixpath.normpath(root) if root.startswith("/") else root
        self.tree = FileTree.empty(root)

    def relative(self, path: str, base: str = "") -> list[str] | None:
        """Components of `path` below the root; None when it lies outside the root."""
        path = path.strip()
        if path.startswith("~"):
            return None if self.root_path.startswith("/") else path.lstrip("~/").split("/")
        if path.startswith("/"):
            full = posixpath.normpath(path)
            if self.root_path.startswith("/"):
                rel = posixpath.relpath(full, self.root_path)
                return None if rel.startswith("..") else [p for p in rel.split("/") if p not in ("", ".")]
            return None
        joined = posixpath.normpath(posixpath.join(base, path)) if base else posixpath.normpath(path)
        return None if joined.startswith("..") else [p for p in joined.split("/") if p not in ("", ".")]

    def add(self, parts: list[str], kind: Kind | None, size: int | None = None) -> None:
        node = self.tree.root
        for index, part in enumerate(parts):
            child = node.child(part)
            if child is None:
                child = FileNode(part)
                node.children.append(child)
            node.kind = "dir"
            node = child
            if index == len(parts) - 1:
                if kind is not None:
                    child.kind = "dir" if child.children else kind
                if size is not None:
                    child.size = size


def _is_section_header(line: str) -> bool:
    """`ls -R` starts each directory with `PATH:`; prose such as `Files:` or `Note: ...` is not one."""
    if not line.endswith(":") or ": " in line or "\t" in line:
        return False
    return line.startswith(("/", "./", "~/")) or line == ".:" or not any(ch.isspace() for ch in line)


def _tree_entry(rest: str) -> tuple[str, Kind | None, int | None]:
    kind: Kind | None = None
    size = None
    info = _TREE_INFO.match(rest)
    if info:
        rest = info.group("name")
        words = info.group("info").split()
        if words and re.match(r"^[-dl][rwx-]{9}", words[0]):
            kind = "dir" if words[0][0] == "d" else "file"
        if words:
            size = _size(words[-1])
    rest = rest.split(" -> ")[0]
    if rest.endswith("/"):
        kind, rest = "dir", rest.rstrip("/")
    return rest, kind, size


class _ListingParser:
    """One pass over the lines; each line is tried as tree, `ls -l`, section header, path, name."""

    def __init__(self, root: str) -> None:
        self.build = _Builder(root)
        self.section: list[str] | None = []  # the current `ls` section's directory; None: outside
        self.in_ls_section = False
        self.tree_base: list[str] | None = None  # where the current `tree` block is rooted
        self.tree_stack: list[str] = []  # names of the open `tree` directories, by depth
        self.last_plain = ""

    def feed(self, line: str) -> None:
        stripped = line.strip()
        if not stripped:
            self.tree_base = None
            return
        if _NOISE.match(stripped) or _PROMPT.match(stripped):
            return
        tree = _TREE.match(line)
        if tree:
            self._tree_line(len(tree.group("indent")) // 4, tree.group("rest"))
        elif long := _LONG.match(stripped):
            name = long.group("name").split(" -> ")[0].strip("'\"")
            if self.section is not None and name not in (".", ".."):
                kind: Kind = "dir" if long.group("type") == "d" else "file"
                self.build.add(self.section + [name.rstrip("/")], kind, _size(long.group("size").replace(" ", "")))
        elif _is_section_header(stripped):
            self.section = self.build.relative(stripped[:-1])
            self.in_ls_section = True
            if self.section and stripped.startswith(("/", "./")):
                self.build.add(self.section, "dir")
        else:
            self._plain_line(stripped)

    def _tree_line(self, depth: int, rest: str) -> None:
        if self.tree_base is None:
            self.tree_base = [] if self.last_plain in ("", ".") else self.build.relative(self.last_plain)
            self.tree_stack = []
        if self.tree_base is None or depth > len(self.tree_stack):
            return  # outside the root, or a deeper line without its parent
        name, kind, size = _tree_entry(rest)
        if name:
            self.build.add(self.tree_base + self.tree_stack[:depth] + [name], kind, size)
            self.tree_stack[depth:] = [name]

    def _plain_line(self, line: str) -> None:
        self.last_plain = line
        if "\t" in line:  # a table row (the os domain's accessibility tree), not a path
            return
        if line.startswith(("/", "./", "~/")):
            parts = self.build.relative(line.rstrip("/") or "/")
            if parts:
                self.build.add(parts, "dir" if line.endswith("/") else "file")
        elif self.in_ls_section and self.section is not None:
            # `ls -R` without -l: names in columns (quoted when they contain spaces).
            try:
                names = split_words(line, "")  # linear, unlike shlex on a long model line
            except ActionError:
                names = line.split()
            for name in names:
                self.build.add(self.section + [name.rstrip("/*@")], "dir" if name.endswith("/") else "file")


def parse_listing(text: str, root: str = "/") -> FileTree:
    """Read `ls -la`, `ls -R`, `find` and `tree` output into a FileTree rooted at `root`."""
    parser = _ListingParser(root)
    for line in _ANSI.sub("", text).replace("\xa0", " ").replace("\r", "").split("\n"):
        parser.feed(line.rstrip())
    return parser.build.tree
