"""What a session tells its faces, one event type each, and their wire form: the one
vocabulary of the World (engine/world.py), the session (session/core.py), the runner that
owns the model (session/runner/runner.py) and every face.

Each event that changes where a session is carries the state it produced (`turns`, the
current branch's length; `head`, the id of its last turn, 0 when it has none), so a face
never reads back a file or a Session to learn where it is.

`to_dict()` is exactly what `awl run --json` prints (one JSON object per line), so a server
can send the same dicts and a client can read them back with `event_from_dict`. The names
(`event` values and field names) are a public format: change them only with a migration.
Fields marked `local` (Python objects for faces in the same process) are not on the wire.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from agentworld_local.errors import InputError
from agentworld_local.trajectory.schema import TurnRecord


@dataclass(frozen=True)
class SessionEvent:
    #: The `event` value on the wire.
    name: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"event": self.name}
        for item in fields(self):
            if not item.metadata.get("local"):
                out[item.name] = getattr(self, item.name)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionEvent:
        return cls(**{item.name: data[item.name] for item in fields(cls)
                      if item.name in data and not item.metadata.get("local")})


def local(default: Any = None) -> Any:
    """A field for faces in this process only (an exception, a snapshot): not on the wire."""
    return field(default=default, compare=False, repr=False, metadata={"local": True})


@dataclass(frozen=True)
class TurnStarted(SessionEvent):
    """A turn begins with this action (`payload`: the parsed action, e.g. a tool call)."""

    name: ClassVar[str] = "action"
    turn: int
    action: str
    payload: Any = None


@dataclass(frozen=True)
class ThinkingDelta(SessionEvent):
    name: ClassVar[str] = "thinking"
    turn: int
    text: str


@dataclass(frozen=True)
class AnswerDelta(SessionEvent):
    """Raw answer text after thinking, tags included (people read the observation instead)."""

    name: ClassVar[str] = "answer"
    turn: int
    text: str


@dataclass(frozen=True)
class ObservationDelta(SessionEvent):
    """Observation text as it streams: always the start of what the turn records."""

    name: ClassVar[str] = "observation"
    turn: int
    text: str


@dataclass(frozen=True)
class UntaggedDelta(SessionEvent):
    """Answer text while no observation block has opened (small models often write none):
    shown as it streams, marked untagged; the turn's parse decides what is recorded."""

    name: ClassVar[str] = "untagged"
    turn: int
    text: str


@dataclass(frozen=True)
class ObservationReplaced(SessionEvent):
    """The recorded observation differs from what streamed: show this one instead."""

    name: ClassVar[str] = "observation_replaced"
    turn: int
    text: str


@dataclass(frozen=True)
class ContextTrimmed(SessionEvent):
    """The conversation outgrew the context: turns `first`..`last` leave the model's view
    (the system prompt, turn 1 and the later turns stay; the file keeps every turn)."""

    name: ClassVar[str] = "context_trimmed"
    turn: int
    first: int
    last: int
    tokens_before: int
    tokens_after: int
    n_ctx: int


@dataclass(frozen=True)
class TurnFinished(SessionEvent):
    """The turn is done and saved; `record` is the line written to the trajectory."""

    name: ClassVar[str] = "turn_done"
    turn: int
    record: TurnRecord

    @property
    def turns(self) -> int:
        return self.turn  # the saved turn is the branch's last

    @property
    def head(self) -> int:
        return self.record.id

    def to_dict(self) -> dict[str, Any]:
        return {"event": self.name, "turn": self.turn, "record": self.record.to_dict(), "turns": self.turns,
                "head": self.head}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TurnFinished:
        return cls(turn=data["turn"], record=TurnRecord.from_dict(data["record"]))


@dataclass(frozen=True)
class Rewarded(SessionEvent):
    """What the session's reward hook gave the turn just finished (saved beside it)."""

    name: ClassVar[str] = "reward"
    turn: int
    value: float
    source: str
    verdict: dict[str, Any] | None = None


@dataclass(frozen=True)
class TurnCancelled(SessionEvent):
    """The turn was stopped; it is not in the history and was not saved. `by`: who stopped
    it, "client" (a person, a request) or "closing" (the runner closing: a server stopping)."""

    name: ClassVar[str] = "cancelled"
    turn: int
    turns: int = 0
    head: int = 0
    by: str = local("")


@dataclass(frozen=True)
class Undone(SessionEvent):
    """The last turn was dropped; `turns` is how many the current branch keeps."""

    name: ClassVar[str] = "undo"
    turns: int
    head: int = 0


@dataclass(frozen=True)
class Regenerated(SessionEvent):
    """Turn `turn` is being run again with a new sample (its `attempt`; the first is 0): the
    old one left the branch (the file keeps it), which now holds `turns` turns up to `head`."""

    name: ClassVar[str] = "regenerate"
    turn: int
    attempt: int
    turns: int
    head: int


@dataclass(frozen=True)
class ControlAdded(SessionEvent):
    """A control instruction (perturbation) the next turn's prompt will carry."""

    name: ClassVar[str] = "control"
    text: str
    #: How many control instructions the next turn will carry.
    pending: int = 1


@dataclass(frozen=True)
class Forked(SessionEvent):
    """A new session file holds the first `turn` turns of `source` (the turn with id
    `source_id` there; None for the setup alone); the session goes on in `path`."""

    name: ClassVar[str] = "forked"
    source: str
    turn: int
    path: str
    source_id: int | None = None

    @property
    def turns(self) -> int:
        return self.turn  # the new file holds the first `turn` turns, ids 1..turn

    @property
    def head(self) -> int:
        return self.turn

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "turns": self.turns, "head": self.head}


@dataclass(frozen=True)
class SessionOpened(SessionEvent):
    """A session is open in `path` (new, resumed, or the new file of a fork), on a branch of
    `turns` turns up to `head`. `view` (local) is what a face shows of it: the runner's
    snapshot, never the live Session."""

    name: ClassVar[str] = "opened"
    path: str
    domain: str
    turns: int
    head: int
    resumed: bool = False
    view: Any = local()


@dataclass(frozen=True)
class Refused(SessionEvent):
    """A command that is not valid now (undo while a turn runs, anything after close): it
    was not run, nor queued; `message` says why and `hint` what to do."""

    name: ClassVar[str] = "refused"
    command: str
    message: str
    hint: str = ""
    #: "closing" when refused because the runner is closing (a server shutting down).
    by: str = local("")


@dataclass(frozen=True)
class Ready(SessionEvent):
    """The runner finished a command and takes the next one; for a session, where it is
    (`view`: the session's view after it, session/runner/types.SessionState, which faces
    render from instead of keeping a copy of the branch)."""

    name: ClassVar[str] = "ready"
    command: str
    turns: int | None = None
    head: int | None = None
    view: Any = local()
    #: Who cancelled the command before it ran ("client" or "closing"); "" when it ran.
    cancelled_by: str = local("")


@dataclass(frozen=True)
class LoadProgress(SessionEvent):
    name: ClassVar[str] = "load_progress"
    model: str
    fraction: float


@dataclass(frozen=True)
class ModelLoaded(SessionEvent):
    """The model is loaded (or was already): `info` (local) is its ModelInfo."""

    name: ClassVar[str] = "model_loaded"
    model: str
    n_ctx: int
    gpu_layers: int
    info: Any = local()


@dataclass(frozen=True)
class LoadCancelled(SessionEvent):
    """The load was stopped; no model of it stays in memory."""

    name: ClassVar[str] = "load_cancelled"
    model: str


@dataclass(frozen=True)
class FilesListed(SessionEvent):
    """The file system as a hidden probe turn saw it (never in the history or the file)."""

    name: ClassVar[str] = "files"
    paths: list[str]
    tree: Any = local()


@dataclass(frozen=True)
class FromWorld(SessionEvent):
    """The turn's answer comes from its shared world's store (worlds/), not from the model:
    `source` is "store" (this very turn was played before) or "read" (a read the world
    answered before). The answer's events follow, whole."""

    name: ClassVar[str] = "from_world"
    turn: int
    world: str
    source: str


@dataclass(frozen=True)
class Notice(SessionEvent):
    """Something the user should know, said once (e.g. an empty observation)."""

    name: ClassVar[str] = "notice"
    text: str


@dataclass(frozen=True)
class ErrorEvent(SessionEvent):
    """A failure that ends the session or the step; `hint` names the next step."""

    name: ClassVar[str] = "error"
    message: str
    hint: str = ""
    #: The exception (local), so a face can tell a user mistake from a failure.
    error: Any = local()


@dataclass(frozen=True)
class Discarded(SessionEvent):
    """A new session ended before its first turn: its file (the header alone) was removed,
    so the sessions folder lists sessions, not abandoned starts."""

    name: ClassVar[str] = "discarded"
    path: str


@dataclass(frozen=True)
class Saved(SessionEvent):
    """The last word of a session, whatever ended it: where its turns are."""

    name: ClassVar[str] = "saved"
    path: str
    turns: int


EVENT_TYPES: tuple[type[SessionEvent], ...] = (
    TurnStarted, ThinkingDelta, AnswerDelta, UntaggedDelta, ObservationDelta, ObservationReplaced, ContextTrimmed,
    TurnFinished, Rewarded, TurnCancelled, Undone, Regenerated, ControlAdded, Forked, SessionOpened, Refused, Ready,
    LoadProgress, ModelLoaded, LoadCancelled, FilesListed, Notice, ErrorEvent, Discarded, Saved, FromWorld,
)
_BY_NAME = {kind.name: kind for kind in EVENT_TYPES}


def event_from_dict(data: Any) -> SessionEvent:
    """Read one event back from its wire form; anything else is a clear InputError."""
    if not isinstance(data, dict) or not isinstance(data.get("event"), str):
        raise InputError("A session event must be a JSON object with an `event` name.",
                         f"Known events: {', '.join(sorted(_BY_NAME))}.")
    kind = _BY_NAME.get(data["event"])
    if kind is None:
        raise InputError(f"Unknown session event `{data['event']}`.", f"Known events: {', '.join(sorted(_BY_NAME))}.")
    try:
        return kind.from_dict(data)
    except (KeyError, TypeError, ValueError) as problem:
        raise InputError(f"The `{kind.name}` event is incomplete or malformed ({problem}).",
                         "Send the event as `to_dict()` wrote it.") from None
