"""Driving the TUI in tests: a scripted backend, typing actions, reading the screen."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from agentworld_local.defaults import DEFAULT_CTX
from agentworld_local.testing.answers import answer
from agentworld_local.engine.scripted import ScriptedAnswer, ScriptedBackend
from agentworld_local.tui.app import AwlApp, make_app

SIZE = (120, 40)


def scripted(*answers: str | ScriptedAnswer, delay_s: float = 0.0, n_ctx: int = DEFAULT_CTX) -> ScriptedBackend:
    """Answers by name from testing/answers.py, or ScriptedAnswers as given."""
    items = [answer(item).scripted() if isinstance(item, str) else item for item in answers]
    return ScriptedBackend(items, delay_s=delay_s, n_ctx=n_ctx)


def session_app(tmp_path: Path, backend: Any, domain: str = "terminal", **options: Any) -> AwlApp:
    options.setdefault("out", tmp_path / "session.jsonl")
    return make_app(backend=backend, domain=domain, sessions_dir=tmp_path, timings=False, **options)


async def session_opened(pilot: Pilot[Any]) -> None:
    """Until the session screen is up: the runner opens the session on its own thread."""
    from agentworld_local.tui.session_screen import SessionScreen

    await wait_for(lambda: isinstance(pilot.app.screen, SessionScreen))
    await pilot.pause()


async def type_action(pilot: Pilot[Any], text: str, *, wait: bool = True) -> None:
    """Type `text` into the action line as keys, press Enter, and (by default) let the turn finish."""
    await session_opened(pilot)
    field = pilot.app.screen.query_one("#action")
    field.focus()
    field.value = ""
    await pilot.press(*[_key(char) for char in text], "enter")
    if wait:
        await settle(pilot)


async def settle(pilot: Pilot[Any]) -> None:
    """Until the runner has done what it was asked and the screen has shown all it said."""
    app = pilot.app
    await wait_for(lambda: not app.runner.busy and not getattr(app.screen, "busy", ""), timeout_s=30)
    await pilot.pause()
    await pilot.pause()


def _key(char: str) -> str:
    return {" ": "space", ":": "colon", "-": "minus", ".": "full_stop", "/": "slash", "_": "underscore",
            "'": "apostrophe", '"': "quotation_mark", "(": "left_parenthesis", ")": "right_parenthesis",
            ",": "comma"}.get(char, char)


def screen_text(app: AwlApp) -> str:
    """What the terminal shows now, as plain text."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def widget_text(app: AwlApp, selector: str) -> str:
    """The plain text a Static shows."""
    content = app.screen.query_one(selector).render()
    return getattr(content, "plain", str(content))


class GatedBackend:
    """A scripted backend whose turn holds after `after` events until `gate` is set (or the
    turn is cancelled): a turn stays in flight exactly as long as a test needs."""

    def __init__(self, inner: ScriptedBackend, after: int = 5) -> None:
        import threading

        self.inner = inner
        self.after = after
        self.gate = threading.Event()
        self.holding = threading.Event()  # set while the turn waits at the gate

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def for_session(self) -> Any:
        """A session's own backend (a llama model lends each session a sequence): gated too,
        by the same gate, so the turn a test holds is the session's real turn."""
        view = self.inner.for_session()
        if view is self.inner:
            return self
        bound = GatedBackend(view, self.after)
        bound.gate, bound.holding = self.gate, self.holding
        return bound

    def generate(self, messages: Any, **options: Any) -> Any:
        cancel = options.get("cancel")
        for number, event in enumerate(self.inner.generate(messages, **options)):
            if number == self.after:
                self.holding.set()
                while not self.gate.wait(0.01):
                    if cancel is not None and cancel.is_set():
                        break
                self.holding.clear()
            yield event


async def wait_for(condition: Any, timeout_s: float | None = None) -> None:
    """Wait (without blocking the app) until `condition()` is true and the screen is mounted.
    Polled with no deadline of its own: a slow machine is not a failure, and a hang is stopped
    by pytest-timeout's per-test limit (its report shows this frame). `timeout_s` is ignored:
    kept so that callers written when it was a deadline still read the same."""
    import asyncio

    while not condition():
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)  # let a new screen compose and mount


async def footer_with(app: AwlApp, words: str) -> str:
    """The footer's line once it shows `words`: the footer recomposes when the keys change and
    is blank for a few frames meanwhile (a read right after a pause saw it blank in CI)."""
    line = ""

    def shown() -> bool:
        nonlocal line
        line = screen_text(app).splitlines()[-1]
        return words in line

    await wait_for(shown)
    return line


def tree_labels(tree: Any) -> list[str]:
    """Every node label of a Textual Tree (the timeline, the file panel), depth first."""
    labels: list[str] = []

    def walk(node: Any) -> None:
        for child in node.children:
            labels.append(child.label.plain)
            walk(child)

    walk(tree.root)
    return labels
