"""The built-in task judge: a reward that asks any OpenAI-compatible model, at an episode's end,
whether the agent achieved its task (`reward="judge:MODEL@URL"`, session/rewards/).

Before the end it gives 0.0 and sends nothing. At the end it sends one chat request: the system
and user texts of a prompt pack (awl's own, assets/judges/task_judge.toml, or a TOML file of the
user's with the same keys) filled with the task, the initial state, the transcript and how the
episode ended. The judge answers `{"achieved": true|false, "score": 0.0-1.0, "reason": "..."}`,
read forgivingly (thinking dropped, fences and text around it, the last such object wins, score
clamped to 0..1; `achieved` alone scores 1.0/0.0; a score alone leaves `achieved` null).

A judge that cannot be reached, answers an error or answers nothing readable gives 0.0 with an
`error` verdict instead of raising: the trajectory says why, the caller shows it, and an RL run
goes on. Mistakes in what the user wrote (the spec, the pack, an unset key variable) are
InputErrors when the judge is made, before any episode.
"""

from __future__ import annotations

import json

import math
import re
import threading
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld_local.contract.json_object import read_objects
from agentworld_local.contract.parse import THINK_CLOSE
from agentworld_local.engine.remote.options import SPEC_PREFIX, RemoteOptions
from agentworld_local.errors import AwlError, InputError
from agentworld_local.files import read_text, user_path
from agentworld_local.paths import package_assets
from agentworld_local.safe_parse import SyntaxProblem, load_toml
from agentworld_local.session.rewards import JUDGE_PREFIX, EpisodeSoFar, Reward
from agentworld_local.terminal_text import shorten

#: A verdict, not an essay: deterministic, and short enough to come back fast at every episode end.
TEMPERATURE = 0.0
MAX_TOKENS = 512
#: An episode end waits on the judge: a dead one should not hold an RL run for the remote
#: backend's 10 minutes. The client's own retry (with backoff) covers a passing 429/5xx.
TIMEOUT_S = 300.0
RETRIES = 1
#: Bounds on what one request holds (about 8k tokens in all): long texts keep their start and
#: end, cut in the middle with a marker; a long transcript keeps its first and last turns.
TASK_CHARS = 2_000
STATE_CHARS = 6_000
ACTION_CHARS = 1_000
OBSERVATION_CHARS = 3_000
TRANSCRIPT_CHARS = 24_000
REASON_CHARS = 2_000

PLACEHOLDERS = ("task", "initial_state", "transcript", "ending")
_PLACEHOLDER = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")
BUILTIN_PACK = ("judges", "task_judge.toml")
SPEC_HINT = "Write it as judge:MODEL@URL, e.g. judge:Qwen/Qwen3-8B@http://127.0.0.1:8000/v1 (URL: the server's OpenAI API root)."
PACK_HINT = ("A task judge pack is a TOML file with `system` and `user` texts that hold {task}, {initial_state}, "
             "{transcript} and {ending} between them, like awl's own agentworld_local/assets/judges/task_judge.toml.")
_ENDINGS = {
    True: "The agent declared the task done: its last action ended the episode.",
    False: "The agent ran out of steps: the episode was stopped at its step limit without the agent declaring the task done.",
}


@dataclass(frozen=True)
class JudgePack:
    system: str
    user: str
    #: The user's pack file; None for awl's own.
    path: Path | None = None


def load_pack(path: str | Path | None = None) -> JudgePack:
    """The pack at `path` (awl's own when None), checked; InputError with PACK_HINT otherwise."""
    source = user_path(path) if path is not None else package_assets().joinpath(*BUILTIN_PACK)
    text = read_text(source, "task judge pack")
    try:
        data = load_toml(text)
    except SyntaxProblem as problem:
        raise InputError(f"The task judge pack {source} is not TOML ({problem.reason}).", PACK_HINT) from None
    system, user = data.get("system"), data.get("user")
    if not isinstance(system, str) or not isinstance(user, str):
        raise InputError(f"The task judge pack {source} needs a `system` and a `user` text.", PACK_HINT)
    missing = [name for name in PLACEHOLDERS if "{" + name + "}" not in system + user]
    if missing:
        raise InputError(f"The task judge pack {source} lacks {', '.join('{' + n + '}' for n in missing)}.", PACK_HINT)
    return JudgePack(system.strip(), user.strip(), source.resolve() if path is not None else None)


def cut_middle(text: str, limit: int) -> str:
    """`text`, or its start and end with a marker saying how much of the middle was cut."""
    if len(text) <= limit:
        return text
    keep = limit // 2
    return f"{text[:keep]}\n[... {len(text) - 2 * keep:,} characters cut ...]\n{text[-keep:]}"


def transcript(episode: EpisodeSoFar) -> str:
    """Each turn's action and observation, in order, within TRANSCRIPT_CHARS."""
    blocks = [f"## Turn {number}\nAction:\n{cut_middle(turn.action, ACTION_CHARS)}\n\n"
              f"Observation:\n{cut_middle(turn.observation, OBSERVATION_CHARS)}"
              for number, turn in enumerate(episode.turns, start=1)]
    if sum(len(block) + 2 for block in blocks) <= TRANSCRIPT_CHARS:
        return "\n\n".join(blocks) or "(no turns)"
    # The end decides the verdict, the start sets the scene: a third of the room to the first turns.
    head, tail, room = [], [], TRANSCRIPT_CHARS // 3
    for block in blocks:
        if len(block) + 2 > room:
            break
        head.append(block)
        room -= len(block) + 2
    room += TRANSCRIPT_CHARS - TRANSCRIPT_CHARS // 3
    for block in reversed(blocks[len(head):]):
        if len(block) + 2 > room:
            break
        tail.insert(0, block)
        room -= len(block) + 2
    left_out = f"[... turns {len(head) + 1} to {len(blocks) - len(tail)} left out ...]"
    return "\n\n".join([*head, left_out, *tail])


def fill(template: str, values: dict[str, str]) -> str:
    """One pass over the four names only: a transcript holding `{task}` stays as it is, and JSON
    braces in a pack are never read as fields (str.format would choke on them)."""
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], template)


def read_verdict(answer: str) -> dict[str, Any] | str:
    """{"achieved", "score", "reason"} from the judge's answer, or why none could be read."""
    text = (answer or "").rpartition(THINK_CLOSE)[2].strip()
    if not text:
        return "the judge answered nothing"
    for data in reversed(_objects(text)):  # the verdict comes last, after any reasoning
        if "achieved" in data or "score" in data:
            break
    else:
        return "no JSON object with `achieved` or `score`"
    achieved, score = _truth(data.get("achieved")), _number(data.get("score"))
    if achieved is None and score is None:
        return "neither `achieved` (true/false) nor `score` (a number) can be read"
    if score is None:
        score = 1.0 if achieved else 0.0
    reason = data.get("reason")
    reason = reason if isinstance(reason, str) else "" if reason is None else str(reason)
    return {"achieved": achieved, "score": min(1.0, max(0.0, score)), "reason": cut_middle(reason.strip(), REASON_CHARS)}


def _truth(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "false", "no"):
        return value.strip().lower() in ("true", "yes")
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


class TaskJudge:
    """A reward hook: at the episode's end, the judge model's score of whether the task was achieved."""

    def __init__(self, model: str, base_url: str, *, pack: str | Path | None = None, api_key_env: str | None = None,
                 temperature: float = TEMPERATURE, max_tokens: int = MAX_TOKENS, timeout_s: float = TIMEOUT_S,
                 retries: int = RETRIES) -> None:
        try:
            self.remote = RemoteOptions(base_url=base_url, api_model=model, api_key_env=api_key_env,
                                        timeout_s=timeout_s, retries=retries)
        except InputError as error:
            raise InputError(f"The task judge {model}@{base_url}: {error.message}", SPEC_HINT) from None
        self.remote.api_key()  # a named key variable that is unset: said now, not at the first episode's end
        if max_tokens < 1:
            raise InputError(f"The task judge's max_tokens {max_tokens} must be at least 1.", f"E.g. {MAX_TOKENS}.")
        self.pack = load_pack(pack)
        self.temperature, self.max_tokens = temperature, max_tokens
        self.name = f"{JUDGE_PREFIX}{model}@{self.remote.endpoint}"
        self.identity: dict[str, Any] = {"judge_model": model, "endpoint": self.remote.endpoint}
        if self.pack.path is not None:
            self.identity["pack"] = str(self.pack.path)
        self._client: Any = None
        self._lock = threading.Lock()

    @classmethod
    def from_spec(cls, spec: str, **options: Any) -> "TaskJudge":
        """`MODEL@URL` (the `judge:` prefix may stay on); `options` as for the constructor."""
        body = spec.strip().removeprefix(JUDGE_PREFIX)
        try:
            remote = RemoteOptions.from_spec(SPEC_PREFIX + body)
        except InputError:
            raise InputError(f"`{JUDGE_PREFIX}{body}` is not a task judge.", SPEC_HINT) from None
        return cls(remote.api_model, remote.base_url, **options)

    def messages(self, episode: EpisodeSoFar) -> list[dict[str, str]]:
        values = {
            "task": cut_middle(episode.task.strip(), TASK_CHARS) or "(no task given)",
            "initial_state": cut_middle(episode.initial_state.strip(), STATE_CHARS) or "(no initial state given)",
            "transcript": transcript(episode),
            "ending": _ENDINGS[episode.terminated],
        }
        return [{"role": "system", "content": fill(self.pack.system, values)},
                {"role": "user", "content": fill(self.pack.user, values)}]

    def __call__(self, episode: EpisodeSoFar) -> Reward:
        if not episode.ended:
            return Reward(0.0, self.name)
        try:
            answer = self._chat().complete(self.messages(episode), temperature=self.temperature,
                                           max_tokens=self.max_tokens)
        except (AwlError, OSError) as error:
            line = error.one_line() if isinstance(error, AwlError) else f"{type(error).__name__}: {error}"
            return self._failed(line)
        verdict = read_verdict(answer)
        if isinstance(verdict, str):
            return self._failed(f"The judge's answer holds no verdict ({verdict}): {shorten(answer.strip(), 160)}")
        return Reward(verdict["score"], self.name, verdict={**verdict, **self.identity})

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def _chat(self) -> Any:
        """The client, made at the first episode's end (made again after a failure to connect)."""
        from agentworld_local.engine.remote.chat import ChatClient  # openai loads only when a judge asks

        with self._lock:
            if self._client is None:
                self._client = ChatClient(self.remote)
            return self._client

    def _failed(self, line: str) -> Reward:
        return Reward(0.0, self.name, verdict={"error": " ".join(line.split()), **self.identity})


__all__ = ["JudgePack", "TaskJudge", "load_pack", "read_verdict"]


_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_BARE_KEY = re.compile(r"([{,])\s*([A-Za-z_]\w*)\s*:")
_DECODER = json.JSONDecoder()
#: A verdict is flat: a span nesting deeper is not decoded (each try would go that deep).
_DEPTH_LIMIT = 32
_WINDOW = 256
#: The most characters the decoder reads past the place it names in an error (`Infinity`, a unicode escape).
_LOOKAHEAD = 16


def _objects(text: str) -> list[dict[str, Any]]:
    """Every top-level JSON object in `text`, in order (in a code fence or among prose): a
    balanced span that does not read as JSON, or nests objects deeper than a verdict would,
    is passed over, and the objects inside it count."""
    return read_objects(text, _Reader(text).object, depth_limit=_DEPTH_LIMIT)


class _Reader:
    """Reads a balanced span as it is, else with trailing commas, then also bare keys, repaired
    (judges write JSON loosely). Each repair is made once over the whole text, not per span:
    neither crosses a span's braces, so a span of the repaired text is that span repaired."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._repairs: list[tuple[str, Callable[[int], int]]] | None = None

    def object(self, start: int, end: int) -> dict[str, Any] | None:
        data = _decoded(self.text, start, end)
        if data is None:
            for repaired, moved in self._repaired():  # bare keys last: the repair may touch strings
                data = _decoded(repaired, moved(start), moved(end - 1) + 1)
                if data is not None:
                    break
        return data if isinstance(data, dict) else None

    def _repaired(self) -> list[tuple[str, Callable[[int], int]]]:
        if self._repairs is None:
            commas, after_commas = _substituted(self.text, _TRAILING_COMMA, r"\1")
            keys, after_keys = _substituted(commas, _BARE_KEY, r'\1"\2":')
            self._repairs = [(commas, after_commas), (keys, lambda index: after_keys(after_commas(index)))]
        return self._repairs


def _decoded(text: str, start: int, end: int) -> Any:
    """The JSON value that is exactly text[start:end], or None. It is read through a window
    that grows while the decoder runs out of text: spans nest, and copying each one whole (or
    reading in place, where an error counts the lines before it) would be quadratic."""
    width = _WINDOW
    while True:
        stop = min(end, start + width)
        window = text[start:stop]
        try:
            data, used = _DECODER.raw_decode(window)
        except RecursionError:  # nested deeper than the decoder goes, whatever follows
            return None
        except json.JSONDecodeError as error:
            if stop == end or not _cut_short(error, len(window)):
                return None
            width *= 4
            continue
        return data if start + used == end else None


def _cut_short(error: json.JSONDecodeError, length: int) -> bool:
    """Whether the error may come from the window's end rather than from the text."""
    return error.msg.startswith("Unterminated string") or error.pos + _LOOKAHEAD >= length


def _substituted(text: str, pattern: re.Pattern[str], replacement: str) -> tuple[str, Callable[[int], int]]:
    """`text` with `pattern` replaced, and where a brace of `text` lands in it. A brace is never
    inside a match, only its first character (kept first) or its last (kept last)."""
    starts, ends, shifts, pieces, position = [], [], [0], [], 0
    for match in pattern.finditer(text):
        written = match.expand(replacement)
        pieces += [text[position:match.start()], written]
        position = match.end()
        starts.append(match.start())
        ends.append(match.end())
        shifts.append(shifts[-1] + len(written) - len(match.group()))

    def moved(index: int) -> int:
        begun = bisect_right(starts, index)  # the matches that start at or before `index`
        if begun and index == starts[begun - 1] and index < ends[begun - 1] - 1:
            return index + shifts[begun - 1]  # a match's first character: only earlier matches moved it
        return index + shifts[begun]

    return "".join(pieces) + text[position:], moved
