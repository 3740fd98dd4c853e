"""What a session tells its faces, one event type each, and their wire form.

`to_dict()` is exactly what `awl run --json` prints (one JSON object per line), so a server
can send the same dicts and a client can read them back with `event_from_dict`. The names
(`event` values and field names) are a public format: change them only with a migration.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
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
            out[item.name] = getattr(self, item.name)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionEvent:
        return cls(**{item.name: data[item.name] for item in fields(cls) if item.name in data})


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

    def to_dict(self) -> dict[str, Any]:
        return {"event": self.name, "turn": self.turn, "record": self.record.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TurnFinished:
        return cls(turn=data["turn"], record=TurnRecord.from_dict(data["record"]))


@dataclass(frozen=True)
class TurnCancelled(SessionEvent):
    """The turn was stopped; it is not in the history and was not saved."""

    name: ClassVar[str] = "cancelled"
    turn: int


@dataclass(frozen=True)
class Undone(SessionEvent):
    """The last turn was dropped; `turns` is how many the current branch keeps."""

    name: ClassVar[str] = "undo"
    turns: int


@dataclass(frozen=True)
class ControlAdded(SessionEvent):
    """A control instruction (perturbation) the next turn's prompt will carry."""

    name: ClassVar[str] = "control"
    text: str


@dataclass(frozen=True)
class Forked(SessionEvent):
    """A new session file holds the first `turn` turns of `source` (the turn with id
    `source_id` there; None for the setup alone); the session goes on in `path`."""

    name: ClassVar[str] = "forked"
    source: str
    turn: int
    path: str
    source_id: int | None = None


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


@dataclass(frozen=True)
class Saved(SessionEvent):
    """The last word of a session, whatever ended it: where its turns are."""

    name: ClassVar[str] = "saved"
    path: str
    turns: int


EVENT_TYPES: tuple[type[SessionEvent], ...] = (
    TurnStarted, ThinkingDelta, AnswerDelta, ObservationDelta, ObservationReplaced, ContextTrimmed, TurnFinished,
    TurnCancelled, Undone, ControlAdded, Forked, Notice, ErrorEvent, Saved,
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
