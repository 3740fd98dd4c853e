"""What replaying a saved trajectory means, independent of how it is shown: which turns in
which order (the current branch, or any other branch the file holds), what else shaped
each turn (context cuts, regenerated samples), and the pace of a replay. The faces render
it: cli/replay_plain.py prints it, tui/replay.py plays it in the TUI.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from agentworld_local.errors import TrajectoryError
from agentworld_local.safe_parse import SyntaxProblem, load_json
from agentworld_local.trajectory.reader import Trajectory, count
from agentworld_local.trajectory.schema import TurnRecord

HAND_WRITTEN_LINE = "hand-written example, not model output"
_SHELL_DOMAINS = {"shell", "terminal", "bash", "sh"}
_MARKUP = re.compile(r"^\s*<(?:!doctype\s+html|html|head|body|div|\?xml|[A-Za-z][\w:.-]*[\s/>])", re.IGNORECASE)


def replay_turns(traj: Trajectory, turn: int | None = None) -> list[TurnRecord]:
    """The turns a replay shows: the current branch, or only its position `turn` (1-based)."""
    branch = traj.current_branch()
    if turn is not None and not 1 <= turn <= len(branch):
        raise TrajectoryError(
            f"turn {turn} is out of range: {traj.path} has {count(len(branch), 'turn')} in its current branch.",
            f"Pick a turn from 1 to {len(branch)}." if branch else "Replay it without --turn.",
        )
    return [branch[turn - 1]] if turn is not None else branch


def header_lines(traj: Trajectory, shown: int) -> list[str]:
    """The header block as plain lines (shared by both modes)."""
    h = traj.header
    lines = [f"trajectory: {traj.path}"]
    if h.hand_written:
        lines.append(HAND_WRITTEN_LINE)
    if h.model is not None:
        arch = f" ({h.model.architecture})" if h.model.architecture else ""
        lines.append(f"model: {h.model.name}{arch}")
    elif not h.hand_written:
        lines.append("model: not recorded")
    scenario = f" - scenario: {h.scenario.get('title') or h.scenario.get('name')}" if h.scenario else ""
    lines.append(f"domain: {h.domain or 'unknown'}{scenario}")
    if h.task:
        lines.append(f"task: {h.task}")
    if isinstance(h.agent, dict):
        lines.append(f"agent: {h.agent.get('name')} ({agent_backend(h.agent)})")
    for control in h.controls:
        lines.append(f"control: {control}")
    if h.forked_from:
        lines.append(f"forked from {h.forked_from.get('file')} at turn {h.forked_from.get('turn')}")
    if h.note:
        lines.append(f"note: {h.note}")
    extra = len(traj.turns) - shown
    abandoned = f" (plus {extra} undone)" if extra else ""
    lines.append(f"turns: {shown}{abandoned}")
    return lines


def turn_stats(record: TurnRecord, sep: str = " · ") -> str:
    """`prompt 812 tok · generated 64 tok · 1.9 s · 33.1 tok/s`, from whatever was recorded
    (`~812`: awl's estimate, where a server did not report the count)."""
    parts = []
    prompt, thinking, generated = (record.token_count(key) for key in ("prompt_total", "thinking", "generated"))
    seconds, speed = record.timing("total_s"), record.timing("tokens_per_s")
    about = {key: "~" if record.estimated(key) else "" for key in ("prompt_total", "thinking", "generated")}
    if prompt is not None:
        parts.append(f"prompt {about['prompt_total']}{prompt} tok")
    if thinking:
        parts.append(f"thinking {about['thinking']}{thinking} tok")
    if generated is not None:
        parts.append(f"generated {about['generated']}{generated} tok")
    if seconds is not None:
        parts.append(f"{seconds:.1f} s")
    if speed:
        parts.append(f"{speed:.1f} tok/s")
    if record.finish == "length":
        parts.append("cut off at max_tokens")
    elif record.finish == "cancelled":
        parts.append("cancelled")
    return sep.join(parts)


def action_lexer(record: TurnRecord, domain: str) -> str | None:
    if _looks_like_json(record.action):
        return "json"
    payload = record.action_payload
    keystrokes = isinstance(payload, list) and any(isinstance(p, dict) and "keystrokes" in p for p in payload)
    return "bash" if domain.lower() in _SHELL_DOMAINS or keystrokes else None


def observation_lexer(text: str) -> str | None:
    if _looks_like_json(text):
        return "json"
    if _MARKUP.match(text):
        return "xml" if text.lstrip().startswith("<?xml") else "html"
    return None


def _looks_like_json(text: str) -> bool:
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return False
    try:
        load_json(stripped)
    except SyntaxProblem:
        return False
    return True


def turn_notes(record: TurnRecord) -> list[str]:
    """What else shaped this turn: a context cut made here, a regenerated sample, settings or a
    model a resume changed."""
    notes = []
    context = record.context if isinstance(record.context, dict) else {}
    omitted = context.get("omitted_turns")
    if isinstance(context.get("cut"), dict) and isinstance(omitted, dict):
        first, last = omitted.get("first"), omitted.get("last")
        if isinstance(first, int) and isinstance(last, int) and last >= first:
            span = f"turn {first}" if first == last else f"turns {first}-{last}"
            notes.append(f"context cut: from here the model no longer sees {span}")
    cut = thinking_cut_note(record)
    if cut:
        notes.append(f"{cut} by the thinking budget")
    attempt = record.extra.get("attempt") if isinstance(record.extra, dict) else None
    if isinstance(attempt, int) and not isinstance(attempt, bool) and attempt > 0:
        notes.append(f"regenerated: sample {attempt + 1} of this turn")
    if record.settings:  # a resume changed them (session/resume_rules.py)
        changed = ", ".join(f"{key} {value}" for key, value in record.settings.items())
        notes.append(f"settings other than the header's: {changed}")
    if record.model is not None:
        notes.append(f"model other than the header's: {record.model.path or record.model.name}")
    if isinstance(record.agent, dict):
        notes.append(agent_note(record.agent))
    return notes


def thinking_cut_note(record: TurnRecord) -> str:
    """`thinking cut at 1,024 tokens` when the thinking budget ended this turn's thinking
    (`tokens.thinking_cut`, written only then); "" otherwise, and for files older than it."""
    if record.tokens.get("thinking_cut") is not True:
        return ""
    thinking = record.token_count("thinking")
    at = f" at {'~' if record.estimated('thinking') else ''}{thinking:,} tokens" if thinking else ""
    return f"thinking cut{at}"


def agent_backend(agent: dict[str, Any]) -> str:
    """What produced an agent's proposals, as its header entry says: a `scripted:FILE` agent
    is "scripted" even where an older awl recorded it as llama.cpp."""
    spec, name = str(agent.get("spec") or ""), str(agent.get("name") or "")
    if spec.startswith("scripted:") or name.startswith("scripted:"):
        return "scripted"
    return str(agent.get("backend") or "unknown backend")


#: How a proposal became the action, as replay says it (agent/episode.py's decisions).
_DECISIONS = {"auto": "run as proposed", "approved": "approved by the user", "edited": "edited by the user",
              "replaced": "replaced by the user"}


def agent_note(agent: dict[str, Any]) -> str:
    """`agent proposed: ls -la (edited by the user)`: the agent side of a turn."""
    proposal = " ".join(str(agent.get("proposal", "")).split())
    shown = proposal if len(proposal) <= 80 else proposal[:79] + "…"
    asked = ", asked twice" if agent.get("asks") == 2 else ""
    return f"agent proposed: {shown} ({_DECISIONS.get(str(agent.get('decision')), 'run')}{asked})"


# -- branches ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Branch:
    """One line of play through the file: the turns from the first to `turns[-1]`."""

    turns: list[TurnRecord]
    current: bool  # the branch the session was on when the file was last written
    #: Position (1-based) of the first turn not shared with the current branch; 0 for the current one.
    leaves_at: int = 0

    def describe(self) -> str:
        size = count(len(self.turns), "turn")
        if self.current:
            return f"current branch, {size}"
        return f"undone branch from turn {self.leaves_at}, {size}"


def branches(traj: Trajectory) -> list[Branch]:
    """The current branch first (possibly empty, when every turn was undone), then every
    other branch the file holds (one per turn no later turn continues), in file order."""
    current = traj.current_branch()
    on_current = {record.id for record in current}
    continued = {record.parent for record in traj.turns if record.parent is not None}
    found = [Branch(current, True)]
    for record in traj.turns:
        if record.id in continued or record.id in on_current:
            continue
        turns = traj.branch(record.id)
        shared = next((i for i, t in enumerate(turns) if t.id not in on_current), len(turns))
        found.append(Branch(turns, False, leaves_at=shared + 1))
    return found


# -- the pace of a replay --------------------------------------------------------------------

#: Replay speeds, as multiples of the pace below; the TUI steps through them.
SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
#: Seconds a turn stays on screen at speed 1 when its generation time was not recorded.
DEFAULT_TURN_S = 1.5
#: However long a turn took to generate, a replay at speed 1 shows it for this long at most...
MAX_TURN_S = 6.0
#: ...and at least this long, so short turns can still be read.
MIN_TURN_S = 0.8


def turn_pause(record: TurnRecord, speed: float = 1.0) -> float:
    """Seconds to show `record` before the next turn: its recorded generation time (how the
    session felt), kept readable, divided by the speed."""
    seconds = record.timing("total_s") or DEFAULT_TURN_S
    return min(MAX_TURN_S, max(MIN_TURN_S, seconds)) / max(speed, 1e-3)


@dataclass
class ReplayCursor:
    """Where a replay is: a branch and a position on it (0 = the initial state, before turn 1;
    n = after turn n), whether it plays, and how fast. A face moves it and shows `state()`."""

    traj: Trajectory
    branch_index: int = 0
    position: int = 0
    playing: bool = False
    speed: float = 1.0
    all_branches: list[Branch] = field(init=False)

    def __post_init__(self) -> None:
        self.all_branches = branches(self.traj)

    @property
    def branch(self) -> Branch:
        return self.all_branches[self.branch_index]

    @property
    def turns(self) -> list[TurnRecord]:
        return self.branch.turns

    @property
    def record(self) -> TurnRecord | None:
        """The turn just shown (None at the initial state)."""
        return self.turns[self.position - 1] if self.position else None

    @property
    def at_end(self) -> bool:
        return self.position >= len(self.turns)

    def state(self) -> str:
        """The world as it is at this position: the last observation, or the initial state."""
        record = self.record
        return record.observation if record is not None else self.traj.header.initial_state

    def step(self, delta: int = 1) -> bool:
        """Move `delta` turns (clamped to the branch); True when the position changed."""
        return self.jump(self.position + delta)

    def jump(self, position: int) -> bool:
        target = max(0, min(len(self.turns), position))
        moved = target != self.position
        self.position = target
        if self.at_end:
            self.playing = False
        return moved

    def toggle_play(self) -> bool:
        """Play (from the start again when at the end) or pause; returns whether it plays now."""
        if not self.playing and self.at_end:
            self.position = 0
        self.playing = not self.playing and bool(self.turns)
        return self.playing

    def tick(self) -> bool:
        """One beat of playback: the next turn. Returns whether playback goes on."""
        if self.playing:
            self.step(1)
        return self.playing

    def pause_s(self) -> float:
        """How long the current position stays on screen while playing."""
        record = self.record
        if record is None:
            return MIN_TURN_S / max(self.speed, 1e-3)
        return turn_pause(record, self.speed)

    def change_speed(self, steps: int) -> float:
        """Faster (steps > 0) or slower through SPEEDS; returns the new speed."""
        nearest = min(range(len(SPEEDS)), key=lambda i: abs(SPEEDS[i] - self.speed))
        self.speed = SPEEDS[max(0, min(len(SPEEDS) - 1, nearest + steps))]
        return self.speed

    def switch_branch(self, delta: int = 1) -> Branch:
        """The next (or previous) branch, cycling; the position stays (clamped to its length)."""
        if len(self.all_branches) > 1:
            self.branch_index = (self.branch_index + delta) % len(self.all_branches)
            self.position = min(self.position, len(self.turns))
            self.playing = self.playing and not self.at_end
        return self.branch
