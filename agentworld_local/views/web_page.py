"""The web domain's page as an HTML file for the user's real browser (a face opens it).

The page is model output, so the browser must not run or fetch anything it says: the file
is a small wrapper whose Content-Security-Policy allows no script and no network, and the
page itself sits in a sandboxed iframe (`srcdoc`). HTML is shown as the model wrote it, with
each element id (`bid`) drawn next to its element; an accessibility tree becomes a readable
nested list with the ids visible, so a user can pick the id for `click 12`. A whole session's
pages (`awl export --format html`, views/session_page.py) are drawn with the same `page_view`
inside the same `inert_document`.
"""

from __future__ import annotations

import re
import tempfile
from html import escape
from pathlib import Path

from agentworld_local.files import writing_whole

#: Nothing loads, nothing runs: inline styles only, images only from data: URLs.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
_AX_LINE = re.compile(r"^(?:\[(?P<bid>[^\]]*)\]\s+)?(?P<role>[A-Za-z][\w-]*)(?:\s+(?P<name>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"))?(?P<rest>.*)$")
_URL = re.compile(r"url='([^']*)'")

_WRAPPER_STYLE = """
body { margin: 0; font: 14px/1.4 system-ui, sans-serif; background: #f4f4f5; color: #18181b; }
header { padding: 8px 14px; background: #27272a; color: #fafafa; }
header .note { color: #fbbf24; font-size: 12px; }
header .url { font-family: ui-monospace, monospace; color: #a5f3fc; }
iframe { width: 100%; height: calc(100vh - 70px); border: 0; background: #fff; }
main.ax { padding: 12px 18px; }
ul { list-style: none; padding-left: 18px; margin: 2px 0; border-left: 1px dotted #d4d4d8; }
li { margin: 1px 0; }
.bid { font: 12px ui-monospace, monospace; background: #fde68a; color: #78350f; border-radius: 3px; padding: 0 4px; margin-right: 4px; }
.role { font: 12px ui-monospace, monospace; color: #71717a; margin-right: 4px; }
.props { font-size: 12px; color: #71717a; margin-left: 4px; }
.r-link .name { color: #1d4ed8; text-decoration: underline; }
.r-button .name { border: 1px solid #a1a1aa; border-radius: 4px; padding: 0 6px; background: #fafafa; }
.r-heading .name { font-size: 17px; font-weight: 600; }
.r-textbox .name, .r-searchbox .name, .r-combobox .name { border: 1px solid #a1a1aa; padding: 0 6px; background: #fff; }
.r-StaticText .role { display: none; }
.plain { white-space: pre-wrap; font-family: ui-monospace, monospace; }
"""

#: Drawn inside the page: each element's id in front of it.
_BID_STYLE = ("<style>[bid]::before { content: '[' attr(bid) ']'; font: 11px monospace; background: #fde68a; "
              "color: #78350f; border-radius: 3px; padding: 0 3px; margin-right: 3px; }</style>")


def is_html(text: str) -> bool:
    stripped = text.lstrip()
    return stripped.startswith("<") and not stripped.startswith("<?xml")


#: What every page of awl says of itself: none of it is real.
SIMULATED_NOTE = "Simulated by a world model: nothing on this page is real, links and forms do nothing."


def web_page_html(state: str, *, title: str = "", note: str = "") -> str:
    """The wrapper document for one page state (HTML or an accessibility tree)."""
    state = clean_text(state)
    url = page_url(state)
    heading = title or page_title(state) or "simulated page"
    bar = [f"<div><strong>{escape(heading)}</strong></div>"]
    if url:
        bar.append(f'<div class="url">{escape(url)}</div>')
    bar.append(f'<div class="note">{escape(note or SIMULATED_NOTE)}</div>')
    return inert_document(heading, f"<header>{''.join(bar)}</header>\n{page_view(state)}")


def page_view(state: str) -> str:
    """One web page state, inert: HTML in a sandboxed iframe (scripts, forms and navigation off;
    the wrapper's CSP holds inside it too), with each element's id drawn; an accessibility tree
    as a readable list. Only for a document that carries `inert_document`'s CSP."""
    state = clean_text(state)
    if is_html(state):
        return f'<iframe sandbox="" title="page" srcdoc="{escape(_BID_STYLE + state, quote=True)}"></iframe>'
    return f'<main class="ax">{axtree_html(state)}</main>'


def inert_document(title: str, body: str, *, style: str = "") -> str:
    """A whole HTML document around `body` (trusted markup: what it holds of the model's text is
    escaped or in `page_view`'s sandbox) whose Content-Security-Policy lets nothing load or run."""
    return (
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n"
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        f"<title>{escape(clean_text(title))} - awl</title>\n<style>{_WRAPPER_STYLE}{style}</style></head>\n"
        f"<body>{body}\n</body></html>\n"
    )


def axtree_html(tree: str) -> str:
    """An accessibility tree as nested lists: `[12] link 'Cart'` keeps its id visible."""
    out: list[str] = []
    depth = 0  # open <ul> levels
    for raw in tree.splitlines():
        if not raw.strip():
            continue
        level = _indent(raw) + 1
        while depth < level:
            out.append("<ul>")
            depth += 1
        while depth > level:
            out.append("</ul>")
            depth -= 1
        out.append(f"<li>{_ax_item(raw.strip())}</li>")
    out.extend("</ul>" for _ in range(depth))
    return "\n".join(out)


def write_web_page(state: str, *, directory: str | Path | None = None, title: str = "", note: str = "") -> Path:
    """Write the page to `directory` (default: a new private temporary folder) and return
    the file's path, for `webbrowser.open(path.as_uri())`."""
    folder = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="awl-web-"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "page.html"
    with writing_whole(path, overwrite=True) as handle:  # a browser never opens half a page
        handle.write(web_page_html(state, title=title, note=note).encode("utf-8"))
    return path


def clean_text(text: str) -> str:
    """No NUL or other C0 control bytes (a browser shows them as garbage), no lone surrogates
    (no encoder takes them): each becomes U+FFFD, as in terminal_text."""
    return re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]", "\ufffd", text)


def _indent(line: str) -> int:
    prefix = line[: len(line) - len(line.lstrip("\t "))]
    return prefix.count("\t") + prefix.count(" ") // 2


def _ax_item(line: str) -> str:
    match = _AX_LINE.match(line)
    if match is None or (match["bid"] is None and not match["name"] and match["rest"].strip()):
        return f'<span class="plain">{escape(line)}</span>'
    role, name, rest = match["role"], match["name"], match["rest"].strip().lstrip(",").strip()
    parts = [f'<span class="r-{escape(role, quote=True)}">']
    if match["bid"] is not None:
        parts.append(f'<span class="bid">[{escape(match["bid"])}]</span>')
    parts.append(f'<span class="role">{escape(role)}</span>')
    if name:
        parts.append(f'<span class="name">{escape(name[1:-1])}</span>')
    if rest:
        parts.append(f'<span class="props">{escape(rest)}</span>')
    parts.append("</span>")
    return "".join(parts)


def page_url(state: str) -> str:
    for line in state.splitlines()[:6]:
        stripped = line.strip()
        if stripped.startswith("URL:"):
            return stripped[4:].strip()
        if stripped.startswith("<!-- URL:"):
            return stripped[len("<!-- URL:"):].split("-->")[0].strip()
        found = _URL.search(stripped) if stripped.startswith("RootWebArea") else None
        if found:
            return found.group(1)
    return ""


def page_title(state: str) -> str:
    if is_html(state):
        found = re.search(r"<title>(.*?)</title>", state, re.IGNORECASE | re.DOTALL)
        return " ".join(found.group(1).split()) if found else ""
    for line in state.splitlines():
        found = re.match(r"\s*RootWebArea\s+'((?:[^'\\]|\\.)*)'", line)
        if found:
            return found.group(1)
    return ""
