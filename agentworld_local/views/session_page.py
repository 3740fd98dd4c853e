"""A web or desktop session's pages as one self-contained HTML file (`awl export --format html`).

One section per state: the starting page, then each turn of the current branch (its number, the
action, the page the model predicted). It is the view `o`/Ctrl+B opens (views/web_page.py), for a
whole session and for later: web pages go through the same sandboxed `page_view`, the UI trees
of the os and android domains are shown as their text, and the document's Content-Security-Policy
lets nothing load or run, so the file opens offline and the model's markup stays inert.

Everything in it comes from the file, so everything is escaped: an action or a title is made
visible first (control characters and bidirectional overrides as escapes, lone surrogates as
U+FFFD: terminal_text.safe_for_terminal), so no text can reorder or hide what follows it.
"""

from __future__ import annotations

from html import escape

from agentworld_local.errors import InputError, a_or_an
from agentworld_local.terminal_text import safe_for_terminal
from agentworld_local.trajectory.reader import Trajectory
from agentworld_local.views.web_page import SIMULATED_NOTE, clean_text, inert_document, page_url, page_view

#: The domains whose states are pages (a web page, a desktop's or a phone's UI tree).
PAGE_DOMAINS = ("web", "os", "android")

_STYLE = """
body { max-width: 1200px; margin: 0 auto; background: #e4e4e7; }
section { margin: 14px 10px; background: #f4f4f5; border: 1px solid #d4d4d8; border-radius: 6px; overflow: hidden; }
section > h2 { margin: 0; padding: 6px 12px; font-size: 15px; background: #3f3f46; color: #fafafa; }
section .action { padding: 6px 12px; font-family: ui-monospace, monospace; white-space: pre-wrap; word-break: break-all; }
section .url { padding: 0 12px 6px; font-family: ui-monospace, monospace; color: #0e7490; }
section iframe { height: 70vh; resize: vertical; border-top: 1px solid #d4d4d8; }
section main.ax, section pre.tree { margin: 0; padding: 10px 14px; background: #fff; border-top: 1px solid #d4d4d8; }
pre.tree { white-space: pre-wrap; word-break: break-all; font: 12px/1.35 ui-monospace, monospace; }
header .meta { font-size: 12px; color: #d4d4d8; }
"""


def session_html(traj: Trajectory) -> str:
    """The whole document. Refuses a session whose domain has no pages (one line, what fits instead)."""
    domain = traj.header.domain
    if domain not in PAGE_DOMAINS:
        raise InputError(
            f"{traj.path} is {a_or_an(domain or 'unknown')} session; HTML export is for sessions with pages: "
            f"{', '.join(PAGE_DOMAINS)}.",
            "Export it with `--format agentworldbench` (benchmark rows)"
            + (" or `--format asciicast` (a terminal recording)" if domain == "terminal" else "")
            + ", or watch it with `awl replay`.")
    sections = [_section("Start", "", traj.header.initial_state, domain)]
    sections += [_section(f"Turn {record.turn}", record.action, record.observation, domain)
                 for record in traj.current_branch()]
    name = _shown(traj.path.name)
    facts = [f"{domain} session", f"{len(sections) - 1} turn{'' if len(sections) == 2 else 's'}"]
    if traj.header.model is not None:
        facts.append(f"model {_shown(traj.header.model.name)}")
    if traj.header.hand_written:
        facts.append("hand-written example")
    header = [f"<div><strong>{escape(name)}</strong></div>"]
    if traj.header.task:
        header.append(f"<div>Task: {escape(_shown(traj.header.task))}</div>")
    header.append(f'<div class="meta">{escape(", ".join(facts))}</div>')
    header.append(f'<div class="note">{escape(SIMULATED_NOTE)}</div>')
    return inert_document(f"{name} (awl session)", f"<header>{''.join(header)}</header>\n" + "\n".join(sections),
                          style=_STYLE)


def _section(heading: str, action: str, state: str, domain: str) -> str:
    parts = [f"<section><h2>{escape(heading)}</h2>"]
    if action:
        parts.append(f'<div class="action">Action: {escape(_shown(action))}</div>')
    if domain == "web":
        url = page_url(clean_text(state))
        if url:
            parts.append(f'<div class="url">{escape(_shown(url))}</div>')
        parts.append(page_view(state))
    else:  # a desktop's or a phone's UI tree: its text, as the model wrote it
        parts.append(f'<pre class="tree">{escape(clean_text(state))}</pre>')
    parts.append("</section>")
    return "".join(parts)


def _shown(text: str) -> str:
    """A line of the file's text as a person should read it: no control or bidi character acts."""
    return safe_for_terminal(text, keep_colour=False)
