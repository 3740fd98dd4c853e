"""The session screen's widgets. They only display what the screen hands them."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.binding import Binding
from textual.widgets import Input, Static, Tree

from agentworld_local.terminal_text import safe_for_terminal, shorten
from agentworld_local.trajectory.reader import Trajectory
from agentworld_local.trajectory.schema import TurnRecord
from agentworld_local.views.file_tree import FileTree


class ActionInput(Input):
    """The action line, with a history (up/down) like a shell."""

    BINDINGS = [
        Binding("up", "history(-1)", "Previous action", show=False),
        Binding("down", "history(1)", "Next action", show=False),
    ]

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.history: list[str] = []
        self._position = 0

    def remember(self, text: str) -> None:
        if text and (not self.history or self.history[-1] != text):
            self.history.append(text)
        self._position = len(self.history)

    def action_history(self, step: int) -> None:
        if not self.history:
            return
        self._position = max(0, min(len(self.history), self._position + step))
        self.value = self.history[self._position] if self._position < len(self.history) else ""
        self.cursor_position = len(self.value)


def first_line(text: str, limit: int = 48) -> str:
    line = next((line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("<?xml")), "")
    return shorten(safe_for_terminal(" ".join(line.split()), keep_colour=False), limit)


@dataclass(frozen=True)
class TimelineEntry:
    record: TurnRecord
    current: bool  # on the branch the session is on


def turn_label(record: TurnRecord, *, current: bool, timings: bool) -> Text:
    """Action, first line of the observation, tokens and seconds of one turn."""
    label = Text(no_wrap=True, end="")
    label.append(f"{record.turn:>2} ", style="bold" if current else "dim")
    label.append(shorten(safe_for_terminal(record.action, keep_colour=False), 28), style="yellow" if current else "dim")
    label.append(" → ", style="dim")
    label.append(first_line(record.observation) or "(empty)", style="" if current else "dim strike")
    tokens = record.token_count("generated")
    if tokens is not None:
        label.append(f"  {'~' if record.estimated('generated') else ''}{tokens} tok", style="dim")  # ~: awl's estimate
    seconds = record.timing("total_s")
    if timings and seconds is not None:
        label.append(f" {seconds:.1f}s", style="dim")
    if record.extra.get("attempt"):
        label.append(f"  ↻{record.extra['attempt']}", style="magenta")
    if not current:
        label.append("  undone", style="dim italic")
    return label


class Timeline(Tree[int]):
    """Every turn of the file; a branch (turns after an undo or regenerate) nests under the
    turn it left from, and the current branch reads straight down. Node data: the turn's
    number on the current branch, or 0 for a turn that is not on it."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__("session", **kwargs)  # type: ignore[arg-type]
        self.show_root = False
        self.guide_depth = 2
        self.timings = True

    def show(self, traj: Trajectory) -> None:
        self.clear()
        current = {record.id for record in traj.current_branch()}
        children: dict[int | None, list[TurnRecord]] = {}
        for record in traj.turns:
            children.setdefault(record.parent, []).append(record)

        def add_line(node, parent: int | None) -> None:  # type: ignore[no-untyped-def]
            kids = children.get(parent, [])
            # The branch that is current (or else the newest) goes on at this level.
            main = next((kid for kid in kids if kid.id in current), kids[-1] if kids else None)
            while main is not None:
                for kid in kids:
                    if kid is main:
                        continue
                    branch = node.add(turn_label(kid, current=kid.id in current, timings=self.timings),
                                      data=kid.turn if kid.id in current else 0, expand=True)
                    add_line(branch, kid.id)
                node.add_leaf(turn_label(main, current=main.id in current, timings=self.timings),
                              data=main.turn if main.id in current else 0)
                kids = children.get(main.id, [])
                main = next((kid for kid in kids if kid.id in current), kids[-1] if kids else None)

        add_line(self.root, None)
        self.root.expand_all()
        if self.root.children:
            # After the refresh: before it, the new lines have no position and the cursor stays on turn 1.
            self.call_after_refresh(self.move_cursor, self.root.children[-1])


class FilePanel(Tree[str]):
    """The simulated file system, from a listing probed on a throwaway fork; entries new
    since the previous listing are marked `+`."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__("/", **kwargs)  # type: ignore[arg-type]
        self._known: set[str] | None = None
        self.root.set_label(Text("(ctrl+t lists the files)", style="dim"))

    def show_tree(self, tree: FileTree) -> None:
        paths = set(tree.paths())
        new = paths - self._known if self._known is not None else set()
        gone = sorted(self._known - paths) if self._known is not None else []
        self._known = paths
        self.clear()
        self.root.set_label(Text(safe_for_terminal(tree.root.name, keep_colour=False), style="bold"))
        if tree.is_empty:
            self.root.add_leaf(Text("(the listing showed no files)", style="dim"))

        def add(node, file_node, prefix: str) -> None:  # type: ignore[no-untyped-def]
            for child in file_node.children:
                path = f"{prefix}{child.name}" + ("/" if child.kind == "dir" else "")
                label = Text(safe_for_terminal(child.name, keep_colour=False) + ("/" if child.kind == "dir" else ""),
                             style="bold blue" if child.kind == "dir" else "")
                if path in new:
                    label = Text("+ ", style="bold green") + label
                if child.kind == "dir":
                    add(node.add(label, data=path, expand=True), child, f"{prefix}{child.name}/")
                else:
                    node.add_leaf(label, data=path)

        add(self.root, tree.root, "")
        for path in gone[:20]:
            self.root.add_leaf(Text(f"- {path}", style="red strike"), data=path)
        self.root.expand()


def device_label(gpu_layers: int | None, endpoint: str | None = None) -> str:
    """Where the model runs: a server (its endpoint), or here: llama.cpp's -1 means every layer
    on the GPU; a CPU build reports 0."""
    if endpoint:
        return f"server {endpoint}"
    if not gpu_layers:
        return "CPU"
    return "GPU all" if gpu_layers < 0 else f"GPU {gpu_layers} layers"


#: What the status bar shortens a long model name or file name to before it drops anything.
_MODEL_CELLS, _PATH_CELLS = 24, 32
_SEPARATOR = " │ "


def _cut_end(text: str, cells: int) -> str:
    return text if len(text) <= cells else text[: max(cells - 1, 0)] + "…"


def _cut_start(text: str, cells: int) -> str:
    """A file name keeps its end (the stamp's seconds, the domain, `.jsonl`)."""
    return text if len(text) <= cells else "…" + text[len(text) - max(cells - 1, 0):]


def status_text(width: int, *, busy: str, turn: int, path: str, facts: list[tuple[str, str]]) -> Text:
    """The status bar's line within `width` cells, in this order: what is running (and how
    to cancel it), the turn, the file; then `facts` (name, value: model, device, speed,
    context, thinking). A long model name and a long file name shrink first, then the facts
    drop from the last; the running work, the turn and the file stay."""
    facts = list(facts)
    shown_path = path

    def parts() -> list[tuple[str, str, str]]:
        items = [("", busy, "yellow")] if busy else []
        items += [("turn ", str(turn), "bold"), ("", shown_path, "bold")]
        return items + [(name, value, "bold") for name, value in facts]

    def length() -> int:
        items = parts()
        return sum(len(name) + len(value) for name, value, _ in items) + len(_SEPARATOR) * (len(items) - 1)

    if length() > width:  # long names shrink first
        facts = [(name, _cut_end(value, _MODEL_CELLS) if name == "model " else value) for name, value in facts]
        shown_path = _cut_start(path, _PATH_CELLS)
    while length() > width and facts:
        facts.pop()
    if length() > width:
        shown_path = _cut_start(path, max(8, len(shown_path) - (length() - width)))
    text = Text(no_wrap=True, overflow="ellipsis", end="")
    for index, (name, value, style) in enumerate(parts()):
        if index:
            text.append(_SEPARATOR, style="dim")
        text.append(name, style="dim")
        text.append(value, style=style)
    return text


class StatusBar(Static):
    """What is running, the turn, the file; then model, device, speed, context, thinking."""

    _shown: dict[str, object] | None = None

    def show(self, *, model: str, gpu_layers: int | None, tokens_per_s: float | None, context_used: int | None,
             n_ctx: int | None, think: str, turn: int, path: str, busy: str = "", endpoint: str | None = None) -> None:
        speed = f"{tokens_per_s:.1f} tok/s" if tokens_per_s is not None else "– tok/s"
        used = f"{context_used:,}" if context_used is not None else "–"
        size = f"{n_ctx:,}" if n_ctx else "?"
        facts = [("model ", model), ("", device_label(gpu_layers, endpoint)), ("", speed), ("ctx ", f"{used}/{size}"),
                 ("think ", think)]
        self._shown = {"busy": busy, "turn": turn, "path": path, "facts": facts}
        self._render_status()

    def _render_status(self) -> None:
        if self._shown is None:
            return
        width = self.content_size.width or max(self.app.size.width - 2, 20)
        self.update(status_text(width, **self._shown))  # type: ignore[arg-type]

    def on_resize(self) -> None:
        self._render_status()
