"""The world view, rendered per domain: what the simulated world looks like now.

Everything here is model output, so every text is made safe first (no control byte
reaches the user's terminal; only SGR colour survives, and only in the terminal view).
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

from rich.console import RenderableType
from rich.syntax import Syntax
from rich.text import Text

from agentworld_local.safe_parse import SyntaxProblem, load_json
from agentworld_local.terminal_text import safe_for_terminal

#: One theme for every highlighted view (fixed, so snapshots do not depend on the terminal).
THEME = "monokai"


def plain(text: str) -> str:
    """Model text with every control byte and escape shown as a visible escape."""
    return safe_for_terminal(text, keep_colour=False)


def render_state(domain: str, lexer: str, text: str) -> RenderableType:
    """The world's current state (the last observation, or the initial state)."""
    if domain == "terminal":
        return Text.from_ansi(safe_for_terminal(text), no_wrap=True, end="")
    if domain == "web":
        return render_html(text) if lexer == "html" else render_axtree(text)
    if domain == "android":
        return render_ui_hierarchy(text)
    if domain == "os":
        return render_os_tree(text)
    return render_highlighted(text, lexer)


def render_highlighted(text: str, lexer: str) -> RenderableType:
    """Tool results (mcp, swe, search): JSON pretty-printed when it parses, else as is."""
    shown = plain(text)
    if lexer == "json" or shown.lstrip().startswith(("{", "[")):
        try:
            shown = json.dumps(load_json(shown), indent=2, ensure_ascii=False)
            lexer = "json"
        except SyntaxProblem:
            pass
    return Syntax(shown, lexer if lexer != "text" else "text", theme=THEME, word_wrap=True,
                  background_color="default")


def render_axtree(text: str) -> Text:
    """An accessibility tree, element ids (`[12]`) in bold so they can be used in actions."""
    out = Text(end="")
    for line in plain(text).splitlines(keepends=True):
        stripped = line.lstrip("\t ")
        indent = line[: len(line) - len(stripped)].replace("\t", "  ")
        out.append(indent)
        if stripped.startswith("[") and "]" in stripped:
            bid, _, rest = stripped.partition("]")
            out.append(bid + "]", style="bold cyan")
            out.append(rest)
        else:
            out.append(stripped, style="dim" if stripped.startswith("StaticText") else "")
    return out


_BLOCKS = {"p", "div", "section", "article", "header", "footer", "main", "nav", "form", "ul", "ol", "li", "tr",
           "table", "h1", "h2", "h3", "h4", "h5", "h6", "br", "hr", "title", "select", "aside", "dialog"}
_SKIP = {"script", "style"}


class _PageText(HTMLParser):
    """A readable page: headings bold, links and controls with their element id."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out = Text(end="")
        self.skip = 0
        self.styles: list[str] = []

    def _newline(self) -> None:
        if self.out.plain and not self.out.plain.endswith("\n"):
            self.out.append("\n")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = {name: value or "" for name, value in attrs}
        if tag in _SKIP:
            self.skip += 1
        if tag in _BLOCKS:
            self._newline()
        if tag == "li":
            self.out.append("• ")
        bid = attr.get("bid")
        if bid:
            self.out.append(f"[{bid}]", style="bold cyan")
            self.out.append(" ")
        if tag == "input":
            kind = attr.get("type", "text")
            label = attr.get("value") or attr.get("placeholder") or attr.get("aria-label") or kind
            self.out.append(f"⟦{label}⟧ ", style="reverse")
        elif tag == "img":
            self.out.append(f"🖼 {attr.get('alt', 'image')} ", style="dim")
        style = {"a": "underline blue", "button": "reverse", "h1": "bold", "h2": "bold", "h3": "bold",
                 "strong": "bold", "b": "bold", "em": "italic", "option": "dim"}.get(tag, "")
        self.styles.append(style)

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP and self.skip:
            self.skip -= 1
        if self.styles:
            self.styles.pop()
        if tag in _BLOCKS:
            self._newline()

    def handle_data(self, data: str) -> None:
        if self.skip:
            return
        words = " ".join(data.split())
        if words:
            if self.out.plain and not self.out.plain.endswith(("\n", " ")):
                self.out.append(" ")
            self.out.append(words, style=" ".join(s for s in self.styles if s))

    def handle_comment(self, data: str) -> None:
        if data.strip().startswith("URL:"):
            self.out.append(data.strip(), style="dim")
            self._newline()


def render_html(text: str) -> Text:
    parser = _PageText()
    try:
        parser.feed(plain(text))
        parser.close()
    except (ValueError, AssertionError):  # html.parser on hostile markup: show what was read
        pass
    return parser.out


_BOUNDS = re.compile(r"\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\]")


def bounds_centre(bounds: str | None) -> tuple[int, int] | None:
    """The centre of an Android `bounds="[x1,y1][x2,y2]"`: where `tap X Y` hits the element."""
    match = _BOUNDS.fullmatch((bounds or "").strip())
    if match is None:
        return None
    x1, y1, x2, y2 = map(int, match.groups())
    return (x1 + x2) // 2, (y1 + y2) // 2


class _UiTree(HTMLParser):
    """An Android UI hierarchy as an indented tree: class, text, id, where a tap hits it, and a
    number of its own (document order; the hierarchy's `index` repeats under every parent)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out = Text(end="")
        self.depth = 0
        self.count = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._node(tag, dict(attrs))
        self.depth += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._node(tag, dict(attrs))

    def handle_endtag(self, tag: str) -> None:
        self.depth = max(0, self.depth - 1)

    def _node(self, tag: str, attr: dict[str, str | None]) -> None:
        if tag != "node":
            return
        if self.out.plain:
            self.out.append("\n")
        self.out.append("  " * max(0, self.depth - 1))
        kind = (attr.get("class") or tag).rsplit(".", 1)[-1]
        self.out.append(kind, style="cyan")
        label = attr.get("text") or attr.get("content-desc")
        if label:
            self.out.append(f" “{label}”", style="bold")
        ident = (attr.get("resource-id") or "").rsplit("/", 1)[-1]
        if ident:
            self.out.append(f" #{ident}", style="dim")
        centre = bounds_centre(attr.get("bounds"))
        if attr.get("clickable") == "true":
            self.out.append(f" ⏵tap {centre[0]} {centre[1]}" if centre else " ⏵tap", style="green")
        elif centre:
            self.out.append(f" at {centre[0]} {centre[1]}", style="dim")
        self.out.append(f" [{self.count}]", style="dim")
        self.count += 1


def render_ui_hierarchy(text: str) -> RenderableType:
    parser = _UiTree()
    try:
        parser.feed(plain(text))
        parser.close()
    except (ValueError, AssertionError):
        pass
    if not parser.out.plain:  # not a hierarchy (e.g. an error message): the text itself
        return render_highlighted(text, "xml")
    return parser.out


def render_os_tree(text: str) -> Text:
    """The desktop's accessibility table (tag, name, text, ...): the role coloured, tabs aligned."""
    out = Text(end="")
    lines = plain(text).splitlines()
    for number, line in enumerate(lines):
        cells = line.split("\t")
        if number:
            out.append("\n")
        if len(cells) > 1:
            out.append(f"{cells[0]:<14}", style="bold" if number == 0 else "cyan")
            out.append("  ".join(cell for cell in cells[1:] if cell))
        else:
            out.append(line)
    return out


_AX_ELEMENT = re.compile(r"^\s*\[([\w-]+)\]\s+(\w+)(?:\s+'((?:[^'\\]|\\.)*)')?")
_HTML_ELEMENT = re.compile(r"<(\w+)\b([^>]*?)\bbid=[\"']([\w-]+)[\"']([^>]*)>([^<]*)", re.IGNORECASE)
_LABEL_ATTR = re.compile(r"\b(?:aria-label|placeholder|value|title|alt)=[\"']([^\"']*)[\"']", re.IGNORECASE)
#: Elements that take text: the picker offers `fill` for them.
FILLABLE = {"textbox", "searchbox", "combobox", "input", "textarea", "select", "spinbutton"}


def web_elements(text: str, lexer: str) -> list[tuple[str, str, str]]:
    """(element id, role or tag, label) of every element a web action can name."""
    found = []
    if lexer == "html":
        for match in _HTML_ELEMENT.finditer(text):
            tag, before, bid, after, inner = match.groups()
            label = inner.strip() or next(iter(_LABEL_ATTR.findall(before + after)), "")
            found.append((bid, tag.lower(), label))
    else:
        for line in text.splitlines():
            match = _AX_ELEMENT.match(line)
            if match:
                found.append((match.group(1), match.group(2), match.group(3) or ""))
    return [(plain(bid), plain(role), plain(label)) for bid, role, label in found]
