"""`awl export --format html`: a web or desktop session's pages in one file that a browser opens
later, offline, with nothing of the model's markup loaded or run.

The session is made by the real path (`awl run` with a scripted model whose pages try to reach a
local server and run a script); the check in a real browser (headless Chromium) counts the
server's hits: a page that loaded or ran anything would have reached it.
"""

from __future__ import annotations

import http.server
import json
import shutil
import threading
import urllib.request
from pathlib import Path

import pytest

from agentworld_local.views.web_page import CSP
from tests.cli.helpers import REPO, assert_one_line_error, awl, scripted_model
from tests.unit.test_web_page import Page

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

#: Markup a hostile action or task carries: a closing tag, quotes, a right-to-left override.
HOSTILE = "</script></title><b>\"q\" 'r' \u202ereversed"
#: How the page shows it: as text, the override as a visible escape that reorders nothing.
SHOWN = HOSTILE.replace("\u202e", "\\u202e")


def hostile_page(base: str) -> str:
    """A page as a compromised model could write it: every way a page loads or runs something."""
    return (f'<html><head><title>Shop</title><meta http-equiv="refresh" content="0;url={base}/refresh">'
            f'<link rel="stylesheet" href="{base}/css"><style>@import url({base}/import); '
            f'body {{ background: url({base}/bg) }}</style></head><body>'
            f'<h1 bid="3">Rain jackets \ud800</h1>'
            f"<script>document.body.dataset.ran = '1'; fetch('{base}/fetch')</script>"
            f'<img src={base}/x><img src=nothing onerror="fetch(\'{base}/onerror\')">'
            f'<iframe src="{base}/frame"></iframe><object data="{base}/object"></object>'
            f'<video poster="{base}/poster" src="{base}/video"></video></body></html>')


def web_session(tmp_path: Path, base: str = "http://127.0.0.1:9") -> Path:
    """A two-turn web session (HTML pages) through `awl run`, its second action hostile; a lone
    surrogate is then written into that action, as a damaged or hand-edited file holds one."""
    raw = f"<think>\nThe page.\n</think>\n<predicted_observation>\n{hostile_page(base)}\n</predicted_observation>"
    model = scripted_model(tmp_path, raw, raw)
    out = tmp_path / "shop.jsonl"
    result = awl("run", "-d", "web", "--state-format", "html", "-m", model, "-o", str(out), "--task", HOSTILE,
                 home=tmp_path, stdin=f'click 12\nfill 5 "{HOSTILE} SURROGATE"\n')
    assert result.returncode == 0, result.stderr
    out.write_bytes(out.read_bytes().replace(b"SURROGATE", b"\\ud800"))
    return out


def export(tmp_path: Path, session: Path) -> Path:
    page = tmp_path / "shop.html"
    result = awl("export", str(session), "--format", "html", "--out", str(page), home=tmp_path)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    return page


def test_the_html_file_shows_every_turn_inert_whatever_the_file_holds(tmp_path):
    page_file = export(tmp_path, web_session(tmp_path))
    text = page_file.read_bytes().decode("utf-8")  # whole UTF-8: no lone surrogate was written
    page = Page(text)
    assert page.all("meta")[1] == {"http-equiv": "Content-Security-Policy", "content": CSP}
    assert page.all("script") == [] and page.all("img") == [] and page.all("link") == []  # nothing of the model's outside the sandbox
    frames = page.all("iframe")
    assert len(frames) == 3 and all(frame["sandbox"] == "" for frame in frames)  # the start page and two turns
    assert all("<script>document.body.dataset.ran" in frame["srcdoc"] for frame in frames[1:])
    headings = [attrs for name, attrs in page.tags if name == "h2"]
    assert len(headings) == 3 and len(page.all("section")) == 3
    words = "".join(page.text)
    assert "Turn 1" in words and "Action: click 12" in words and "Turn 2" in words
    assert f'Action: fill 5 "{SHOWN} \ufffd"' in words and f"Task: {SHOWN}" in words
    assert "\u202e" not in text.split("<iframe")[0]


def test_the_page_can_be_written_to_stdout(tmp_path):
    result = awl("export", str(web_session(tmp_path)), "--format", "html", home=tmp_path)
    assert result.returncode == 0 and result.stdout.startswith("<!DOCTYPE html>") and result.stderr == ""


@pytest.mark.parametrize(("example", "fits"), [("terminal-demo", "--format asciicast"),
                                               ("mcp-notes-server", "--format agentworldbench")])
def test_a_session_without_pages_is_one_line_that_names_what_fits(tmp_path, example, fits):
    out = tmp_path / "x.html"
    result = awl("export", f"assets/examples/{example}.jsonl", "--format", "html", "--out", str(out), home=tmp_path)
    assert_one_line_error(result, "HTML export is for sessions with pages: web, os, android", fits)
    assert not out.exists()


@pytest.mark.parametrize("example", ["os-file-manager", "android-settings"])
def test_a_desktop_session_s_ui_trees_are_shown_as_their_text(tmp_path, example):
    source = REPO / "assets" / "examples" / f"{example}.jsonl"
    page = Page(export(tmp_path, source).read_text(encoding="utf-8"))
    turns = sum(1 for line in source.read_text(encoding="utf-8").splitlines()
                if json.loads(line).get("type") == "turn")
    assert len(page.all("section")) >= 2 and len(page.all("pre")) == len(page.all("section")) <= turns + 1
    assert page.all("iframe") == []  # a UI tree is text, not a page to render
    assert any("<hierarchy" in chunk or "<desktop-frame" in chunk for chunk in page.text)


class Counting(http.server.BaseHTTPRequestHandler):
    """A local server that counts every request it gets (the page must make none)."""

    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - the standard library's name
        self.hits.append(self.path)
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.end_headers()
        self.wfile.write(b"<p>fetched</p>")

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def counting_server():
    Counting.hits = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Counting)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", Counting.hits
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (Debian: apt-get install chromium)")
def test_in_a_real_browser_the_page_loads_nothing_and_runs_no_script(tmp_path, counting_server):
    playwright = pytest.importorskip("playwright.sync_api", reason="the `playwright` package (the test extra)")
    base, hits = counting_server
    page_file = export(tmp_path, web_session(tmp_path, base))
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM)
        try:
            tab = browser.new_page()
            answered: list[str] = []  # requests that got an answer (one the CSP refused gets none)
            tab.on("response", lambda response: answered.append(response.url))
            tab.goto(page_file.as_uri(), wait_until="load")  # the iframes' loads are part of it
            frames = [frame for frame in tab.frames if frame.parent_frame == tab.main_frame]  # the pages
            urls = [frame.url for frame in tab.frames]  # the pages' own frames too: refused, never loaded
            headings = [frame.locator("h1").all_inner_texts() for frame in frames]
            ran = [frame.locator("body[data-ran]").count() for frame in frames]
            actions = tab.locator("section .action").all_inner_texts()
        finally:
            browser.close()
    assert hits == [] and answered == [page_file.as_uri()], (hits, answered)
    assert not any(url.startswith(base) for url in urls), urls
    assert len(frames) == 3 and ran == [0, 0, 0]  # the pages are drawn, and their script never ran
    assert headings[1:] == [["Rain jackets \ufffd"]] * 2  # the surrogate replaced, the page intact
    assert actions == ["Action: click 12", f'Action: fill 5 "{SHOWN} \ufffd"']
    with urllib.request.urlopen(f"{base}/control") as answer:  # the server was there to count
        assert answer.status == 200 and hits == ["/control"]
