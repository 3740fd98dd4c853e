"""What `awl serve --backend openai` adds to a turn over the same request sent straight to the server.

llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`, one thread) serves
a generated GGUF on 127.0.0.1. In this process, `awl serve`'s app (serve/app.py `make_app`
over `load_backend(None, remote=RemoteOptions(...))`, as `awl serve --backend openai
--base-url URL --api-model NAME` builds it) runs under uvicorn on another port. A client opens
a terminal session (`--think off`, temperature 0, seed 1, 32-token answers) and sends its
steps over HTTP (`POST /sessions/{id}/step`), each timed from the request to the response.
awl's streamed request (remote/chunks.py `Client.stream_chat`) is wrapped (the kwargs pass through unchanged)
to keep a copy of each request awl sends and the time from the call to awl closing the stream.
The same requests then go straight to the server with the `openai` client, streamed as awl
streams them, each timed from the call to the end of its stream.

Fair to both sides: a first recording round (not timed) warms both paths up and records each
turn's request; then every timed round opens a fresh session (same seed, same actions: the
same requests), takes an untimed first turn (it evaluates the system prompt), and for each
later turn times awl and the direct request one after the other, which goes first alternating
turn by turn and round by round. Before the second of the two, the previous turn's request is
sent again (untimed), so both start from the same server state (the last request it served).
Per turn: the means over the rounds, the generated tokens of each side (the work matched), and
awl's time split into the server call as awl sees it (create to stream closed) and the rest
(HTTP, the runner, parsing, the saved turn). Goal: awl's mean step within 5 % of the direct mean.

Models: the tests' qwen35moe fixture (hybrid: llama-cpp-python evaluates the whole prompt again
on every request, about half a second here), the tests' plain-attention llama fixture (the
server reuses the cached prefix, so a turn is tens of milliseconds and awl's fixed cost shows
most), and in the full run the bench's larger qwen35moe. `--quick`: 4 timed turns, 5 rounds,
the two small models (about a minute); full: 6 turns, 4 rounds, all three.

    .venv/bin/python bench/serve_remote_overhead.py [--quick]
"""

from __future__ import annotations

import contextlib
import copy
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

from bench_models import CACHE, LABELS, model, print_section, table  # noqa: E402

from agentworld_local.fixtures.tiny_gguf import ensure_fixture  # noqa: E402
from tests.remote.conftest import SERVED, LlamaServer  # noqa: E402

ACTIONS = ["ls", "ls -la", "cat README.md", "pwd", "git status", "echo hello", "cd src", "make test", "git diff",
           "python main.py"]
SESSION = {"domain": "terminal", "think": "off", "temperature": 0, "seed": 1, "max_tokens": 32}
N_CTX = 8192
GOAL = 0.05


@dataclass
class Call:
    """One chat-completion request awl sent: its kwargs (a copy), and when awl called and closed it."""

    kwargs: dict[str, Any]
    started: float
    closed: float | None = None

    @property
    def seconds(self) -> float:
        return (self.closed or self.started) - self.started


@dataclass
class Recorder:
    """Wraps awl's `Client.stream_chat` (class-wide) while recording; the direct side calls `original`
    (`Completions.create`, with the same kwargs)."""

    calls: list[Call] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    original: Any = None

    @contextlib.contextmanager
    def installed(self) -> Iterator["Recorder"]:
        from openai.resources.chat.completions import Completions

        from agentworld_local.engine.remote.chunks import Client

        self.original = Completions.create
        awl_sends = Client.stream_chat  # awl's way to send a streamed request (its kwargs are create's)
        recorder = self

        def create(client: Any, request: dict[str, Any]) -> Any:
            call = Call(copy.deepcopy(request), time.perf_counter())
            stream = awl_sends(client, request)
            close = stream.close

            def closed() -> None:
                if call.closed is None:
                    call.closed = time.perf_counter()
                close()

            stream.close = closed  # awl closes every stream it opens (backend.py _closed_on)
            with recorder.lock:
                recorder.calls.append(call)
            return stream

        Client.stream_chat = create
        try:
            yield self
        finally:
            Client.stream_chat = awl_sends

    def take(self) -> list[Call]:
        with self.lock:
            calls, self.calls = self.calls, []
        return calls


class AwlServe:
    """`awl serve --backend openai` in this process: the app under uvicorn on a free port."""

    def __init__(self, base_url: str, folder: Path) -> None:
        import httpx2
        import uvicorn

        from agentworld_local.engine.remote.options import RemoteOptions
        from agentworld_local.serve.app import make_app
        from agentworld_local.serve.server import bind
        from agentworld_local.engine.loading import load_backend

        backend = load_backend(None, remote=RemoteOptions(base_url, SERVED))
        app = make_app(folder=folder, backend=backend, reveal_simulator=True)  # it reads each step's record
        sock = bind("127.0.0.1", 0)
        self.base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, name="awl-serve",
                                       daemon=True)
        self.thread.start()
        self.http = httpx2.Client(base_url=self.base, timeout=600)
        deadline = time.monotonic() + 60
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("awl serve did not start")
            time.sleep(0.02)

    def open(self) -> str:
        response = self.http.post("/sessions", json=SESSION)
        response.raise_for_status()
        return response.json()["id"]

    def step(self, sid: str, action: str) -> tuple[float, Answer]:
        """(seconds from the request to the response, the answer the turn saved)."""
        started = time.perf_counter()
        response = self.http.post(f"/sessions/{sid}/step", json={"action": action})
        seconds = time.perf_counter() - started
        response.raise_for_status()
        record = response.json()["record"]
        return seconds, Answer(record["raw_output"], record["tokens"]["generated"], record["finish"])

    def close_session(self, sid: str) -> None:
        self.http.delete(f"/sessions/{sid}").raise_for_status()

    def close(self) -> None:
        self.http.close()
        self.server.should_exit = True
        self.thread.join(30)


class Direct:
    """The same requests straight to the server, with the `openai` client, streamed to their end."""

    def __init__(self, base_url: str, create: Any) -> None:
        import openai

        self.client = openai.OpenAI(base_url=base_url, api_key="EMPTY", timeout=600, max_retries=0)
        self._create = create

    def send(self, kwargs: dict[str, Any]) -> tuple[float, Answer]:
        """(seconds from the call to the stream's end, the answer: its text, tokens generated (the
        server's count, else its token chunks: llama-cpp-python's server sends no usage in a stream),
        and how it ended)."""
        started = time.perf_counter()
        stream = self._create(self.client.chat.completions, **copy.deepcopy(kwargs))
        text, pieces, usage, finish = [], 0, None, None
        for chunk in stream:
            if getattr(chunk, "usage", None) is not None:
                usage = chunk.usage.completion_tokens
            for choice in chunk.choices[:1]:
                if choice.delta.content is not None and not choice.delta.role:
                    pieces += 1
                    text.append(choice.delta.content)
                finish = choice.finish_reason or finish
        seconds = time.perf_counter() - started
        stream.close()
        return seconds, Answer("".join(text), usage or pieces, finish or "")

    def close(self) -> None:
        self.client.close()


@dataclass(frozen=True)
class Answer:
    text: str
    tokens: int  # awl's: the record's `generated` (the pieces it read when the server sends no usage)
    finish: str


@dataclass
class Turn:
    """One turn's measurements over the rounds."""

    action: str
    awl: list[float] = field(default_factory=list)
    awl_call: list[float] = field(default_factory=list)  # awl's server call: create to stream closed
    direct: list[float] = field(default_factory=list)
    awl_answers: list[Answer] = field(default_factory=list)
    direct_answers: list[Answer] = field(default_factory=list)


@dataclass
class Measured:
    turns: list[Turn]
    rounds: int
    same_requests: int  # timed rounds' requests identical to the recording round's
    requests: int
    prompt_chars: int  # of the last turn's request


def measure(server_url: str, turns: int, rounds: int, folder: Path) -> Measured:
    recorder = Recorder()
    with recorder.installed():
        awl = AwlServe(server_url, folder)
        direct = Direct(server_url, recorder.original)
        try:
            return _rounds(awl, direct, recorder, turns, rounds)
        finally:
            direct.close()
            awl.close()


def _one_awl(awl: AwlServe, recorder: Recorder, sid: str, action: str) -> tuple[float, Answer, Call]:
    seconds, answer = awl.step(sid, action)
    calls = recorder.take()
    if len(calls) != 1:
        raise RuntimeError(f"awl sent {len(calls)} requests for one step (a thinking continuation?), not 1")
    return seconds, answer, calls[0]


def _rounds(awl: AwlServe, direct: Direct, recorder: Recorder, turns: int, rounds: int) -> Measured:
    actions = [ACTIONS[k % len(ACTIONS)] for k in range(turns + 1)]
    # The recording round: warms both paths, and gives each turn's request to send before awl's.
    sid = awl.open()
    recorded = [_one_awl(awl, recorder, sid, action)[2].kwargs for action in actions]
    for kwargs in recorded[1:]:
        direct.send(kwargs)
    awl.close_session(sid)
    results = [Turn(action) for action in actions[1:]]
    same = 0
    for number in range(rounds):
        sid = awl.open()
        sent = [_one_awl(awl, recorder, sid, actions[0])[2].kwargs]  # the system prompt's turn, not timed
        for k in range(1, turns + 1):
            turn = results[k - 1]
            awl_first = (number + k) % 2 == 0
            if not awl_first:
                seconds, answer = direct.send(recorded[k])
                turn.direct.append(seconds)
                turn.direct_answers.append(answer)
                direct.send(sent[k - 1])  # back to the state awl's step starts from
            seconds, answer, call = _one_awl(awl, recorder, sid, actions[k])
            turn.awl.append(seconds)
            turn.awl_call.append(call.seconds)
            turn.awl_answers.append(answer)
            sent.append(call.kwargs)
            if awl_first:
                direct.send(sent[k - 1])
                seconds, answer = direct.send(call.kwargs)
                turn.direct.append(seconds)
                turn.direct_answers.append(answer)
        same += sum(mine == theirs for mine, theirs in zip(sent, recorded))
        awl.close_session(sid)
    chars = sum(len(message.get("content") or "") for message in recorded[-1]["messages"])
    return Measured(results, rounds, same, rounds * (turns + 1), chars)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def _values(numbers: list[int]) -> str:
    return "/".join(map(str, sorted(set(numbers))))


def rows_of(label: str, measured: Measured) -> tuple[list[list[object]], list[object]]:
    rows = []
    for number, turn in enumerate(measured.turns, start=1):
        awl, call, direct = (statistics.mean(values) for values in (turn.awl, turn.awl_call, turn.direct))
        same = sum(mine.text == theirs.text for mine, theirs in zip(turn.awl_answers, turn.direct_answers))
        finishes = {f"{mine.finish}/{theirs.finish}" for mine, theirs in zip(turn.awl_answers, turn.direct_answers)}
        rows.append([label, number, f"`{turn.action}`", _ms(awl), _ms(call), _ms(direct),
                     f"{(awl - direct) * 1000:+.1f}", f"{(awl / direct - 1) * 100:+.1f} %",
                     _values([answer.tokens for answer in turn.awl_answers]),
                     _values([answer.tokens for answer in turn.direct_answers]), ", ".join(sorted(finishes)),
                     f"{same}/{len(turn.awl_answers)}"])
    awl = statistics.mean(v for turn in measured.turns for v in turn.awl)
    call = statistics.mean(v for turn in measured.turns for v in turn.awl_call)
    direct = statistics.mean(v for turn in measured.turns for v in turn.direct)
    ratio = awl / direct
    pairs = statistics.median(mine / theirs - 1 for turn in measured.turns
                              for mine, theirs in zip(turn.awl, turn.direct))
    verdict = "**pass**" if ratio - 1 <= GOAL else "**not met**"
    if (ratio - 1 <= GOAL) != (pairs <= GOAL):
        verdict += ", but the median pair says otherwise: noise (rerun on a quiet machine)"
    summary = [label, _ms(awl), _ms(direct), f"{ratio:.3f}", f"{(awl - direct) * 1000:+.1f}", f"{pairs * 100:+.1f} %",
               _ms(awl - call),
               f"{(call - direct) * 1000:+.1f}", f"{measured.prompt_chars:,}",
               f"{measured.same_requests}/{measured.requests}",
               f"{verdict} ({(ratio - 1) * 100:+.1f} % vs {GOAL * 100:.0f} %)"]
    return rows, summary


#: The models: the bench's own, and the tests' plain-attention fixture, whose server reuses a
#: cached prefix (the hybrid qwen35moe ones evaluate the whole prompt again each request).
SERVED_LABELS = {**LABELS, "llama": "llama test fixture, hidden 64, 2 layers (the server reuses the prompt's prefix)"}


def served_model(kind: str) -> Path | None:
    return ensure_fixture("llama", CACHE) if kind == "llama" else model(kind)


def section(quick: bool) -> str:
    kinds, turns, rounds = (["tiny", "llama"], 4, 5) if quick else (["tiny", "llama", "big"], 6, 4)
    detail, summary = [], []
    for kind in kinds:
        path = served_model(kind)
        if path is None:
            summary.append([SERVED_LABELS[kind], "not installed"] + [""] * 9)
            continue
        with tempfile.TemporaryDirectory() as folder:
            server = LlamaServer(path, Path(folder) / "llama-server.log", n_ctx=N_CTX)
            try:
                measured = measure(server.base_url, turns, rounds, Path(folder) / "sessions")
            finally:
                server.stop()
        rows, line = rows_of(SERVED_LABELS[kind], measured)
        detail += rows
        summary.append(line)
    return "\n\n".join([
        "## `awl serve --backend openai` in front of a llama.cpp server: overhead per turn",
        "llama-cpp-python's OpenAI-compatible server (one thread, 127.0.0.1) over the model; `awl serve`'s app in "
        "this process over it (`--backend openai`). A terminal session (`--think off`, temperature 0, seed 1, "
        f"32-token answers) sends {turns} timed steps over HTTP after an untimed first one, in {rounds} rounds (a "
        "fresh session each, after an untimed recording round); the exact chat-completion requests awl sent go "
        "straight to the server with the `openai` client as well, streamed to their end. awl and direct alternate "
        "which goes first; before the second, the previous turn's request is sent again, so both start from the "
        "same server state. Means over the rounds (the median pair: of each awl step over its direct request); "
        "measured in one run. awl's server call: from its `create` to the stream closed; outside it: HTTP to "
        "awl, the runner, parsing, the saved turn.",
        table(["model", "awl step ms", "direct ms", "awl / direct", "overhead ms", "median pair overhead",
               "awl outside its server call ms", "awl's server call - direct ms", "last request, chars",
               "requests as recorded", f"goal: within {GOAL * 100:.0f} %"], summary),
        "Per turn (tokens generated, each round's values: awl's count is the record's, the non-empty pieces it "
        "read, as this server sends no usage; the server's is its token chunks, direct; finish: awl/direct; same "
        "text: rounds where both answers are the same text, i.e. the same work):",
        table(["model", "turn", "action", "awl step ms", "awl's server call ms", "direct ms", "overhead ms",
               "overhead", "awl's token count", "server's tokens", "finish", "same text"], detail),
    ])


def main() -> None:
    print_section(section, __doc__)


if __name__ == "__main__":
    main()
