"""OpenAIBackend: the Backend protocol over any OpenAI-compatible chat endpoint.

The messages are the ones the local backend renders (the official layout); the server's
own chat template renders them. Thinking comes from the server's reasoning field or from
`<think>` in the text (stream.py). A thinking budget is a stop and a continuation: when it
is spent the stream is closed and a second request continues the same assistant message
after a closing `</think>` (`continue_final_message`, which vLLM and SGLang accept); a
server that refuses that is named in one error line. Cancel closes the HTTP stream at
once, from a watcher thread, so a server busy thinking stops streaming to us.

Capacity: the turns sent at once are the server's own count (llama-server's slots, SGLang's
running-request limit), bounded by the user's `--parallel`; a server that says nothing gets
the default of its kind (server_kinds.py: vLLM and SGLang batch many, llama-cpp-python's
server takes one at a time and never sees a second). Each session generates through a view
of its own (`for_session`): its own guard and close over the shared connections.

Context: a request asks for no more new tokens than the server's context (reported, or the
user's --ctx) leaves after the prompt (awl's estimate); a server that refuses the count it
was asked anyway is asked again for what its refusal says is left.

Undo, fork and regenerate need nothing here: every request carries the whole
conversation, and the server's prefix cache decides what it evaluates again.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import openai

from agentworld_local.contract.parse import THINK_OPEN
from agentworld_local.defaults import DEFAULT_CTX
from agentworld_local.engine.guard import EitherEvent, GenerationGuard
from agentworld_local.engine.context_window import overflow_hint
from agentworld_local.engine.remote.client import (
    NEAR_CONTEXT_SHARE,
    SERVE_LARGER,
    asks_too_many_tokens,
    describe_error,
    is_context_overflow,
    make_client,
    room_left,
    server_facts,
    server_name,
)
from agentworld_local.engine.remote.options import RemoteOptions
from agentworld_local.engine.remote.server_kinds import ONE_AT_A_TIME, TurnGate, capacity, prefix_cache_notice
from agentworld_local.engine.remote.server_state import ServerStopped, ServerTally, failure_cause, stopped_or
from agentworld_local.engine.remote.stream import AnswerStream
from agentworld_local.engine.remote.usage import ServedCounts, usage_request
from agentworld_local.engine.thinking import FORCED_THINK_END
from agentworld_local.engine.types import (
    GenerationDone,
    GenerationEvent,
    GenerationStats,
    ModelInfo,
    SamplingConfig,
    ServerStatus,
    ThinkBudget,
)
from agentworld_local.errors import GenerationError, ModelError, RequestRefused

BACKEND_NAME = "openai"
#: How often the watcher looks at the cancel flag (a close takes at most this long to start).
_WATCH_S = 0.02
#: Tokens a continuation may add beyond the answer's own cap (the closing tags).
_SLACK_TOKENS = 16
#: Seconds the rest of a stream may take once the server has ended its message (`finish_reason`:
#: only usage and `[DONE]` follow, at once from any real server): one that sends nothing more and
#: keeps the stream open is cut then (its counts lost, the answer whole), not at --timeout. Long
#: enough that a server slowed by a loaded machine still ends its request before awl gives its
#: place to the next turn (a server that still counts it would refuse that one as busy).
_TAIL_S = 30.0
#: Chunks read after the observation closed, for the server's last one (`usage`): the model
#: ends its message right there, so these are the end-of-message and usage chunks; a model
#: that runs on costs the server at most this many tokens before the stream is closed.
_TAIL_CHUNKS = 16
#: Characters an answer may bring for each token it may have, when the server does not count
#: them: generous (a token is about 4 characters of text, rarely over 16), so only a server
#: that runs away or sends junk is cut, never a real answer.
CHARS_PER_TOKEN = 16


def estimate_tokens(messages: list[dict[str, str]]) -> int:
    """About 3.5 characters a token plus each message's framing: the server has the real
    tokenizer, so this errs long (the World trims a little early rather than overflow)."""
    return sum(6 + int(len(m.get("content", "")) / 3.5) for m in messages) + 4


class OpenAIBackend:
    """A model behind an OpenAI-compatible server (vLLM, SGLang, llama-server, ...)."""

    def __init__(self, options: RemoteOptions, *, n_ctx: int | None = None, parallel: int | None = None,
                 notice: Callable[[str], None] | None = None) -> None:
        """Connect and check the model is served (ModelError naming the served ones if not).

        `n_ctx`: the context to plan with when the server does not report one (an explicit
        one larger than the server's is lowered to it, with a notice). `parallel`: the most
        turns to send at once (the user's `--parallel`; the server's own count bounds it).
        """
        self.options = options
        self.notices: list[str] = []
        self._notice_sink = notice
        self._client = make_client(options)
        self.facts = server_facts(self._client, options)
        if self.facts.models and options.api_model not in self.facts.models:
            served = self.facts.models
            raise ModelError(
                f"The server at {options.endpoint} does not serve the model `{options.api_model}`; "
                f"it serves: {', '.join(served[:10])}{', ...' if len(served) > 10 else ''}.",
                f"Use `--api-model {served[0]}`.",
            )
        context = n_ctx or self.facts.n_ctx or DEFAULT_CTX
        #: Whether the context is the server's or the user's (--ctx), not awl's guess: only then
        #: does a request's answer size follow it.
        self.context_known = bool(n_ctx or self.facts.n_ctx)
        if n_ctx and self.facts.n_ctx and n_ctx > self.facts.n_ctx:
            self._notice(f"The server's context is {self.facts.n_ctx:,} tokens; using that, not --ctx {n_ctx:,}.")
            context = self.facts.n_ctx
        self.info = ModelInfo(
            name=options.api_model, path=None, architecture=None, file_size=None, sha256=None,
            sha256_scope="none", n_ctx=context, gpu_layers=0, chat_template_source="server",
            template_thinks=True, backend=BACKEND_NAME, endpoint=options.endpoint,
        )
        if not self.facts.continues_answers:
            self._notice(f"The server at {options.endpoint} (llama-server) cannot continue an answer while the model "
                         "thinks, so a thinking budget (--think N) is not honoured there: thinking runs to its end.")
        self.parallel, said = capacity(self.facts, parallel, options.endpoint)
        if said:
            self._notice(said)
        hybrid = prefix_cache_notice(self.facts, options.base_url, options.endpoint)
        if hybrid:
            self._notice(hybrid)
        #: A server that cuts an answer when another request arrives never sees more than
        #: `parallel` at once, whoever calls (shared by every view).
        self._gate = TurnGate(self.parallel, _WATCH_S) if self.facts.kind == ONE_AT_A_TIME else None
        self._guard = GenerationGuard()
        self._closed = threading.Event()  # the backend's: closing it stops every view
        self._view_closed: threading.Event | None = None  # a view's own
        self.server_separates = False  # learnt from the first answer that carries a reasoning field
        self._usage_options, self._usage_extra = usage_request(self.facts.kind)
        self._tally = ServerTally()  # shared by every view: what servers() says

    def _notice(self, text: str) -> None:
        self.notices.append(text)
        if self._notice_sink is not None:
            self._notice_sink(text)

    #: Nothing to evaluate ahead (Backend.prefetch), no checkpoints.
    idle_prefetch = False
    checkpoint_system_prompt = False
    #: The server has the tokenizer: count_tokens estimates (its answers' counts are the server's).
    counts_exactly = False

    def prefetch(self, messages: list[dict[str, str]], *, cancel: threading.Event | None = None,
                 waits: bool = False) -> int:
        return 0

    def for_session(self) -> "OpenAIBackend":
        """One session's view: the same server and connections, a guard and a close of its
        own (closing it stops only its own stream; closing the backend stops every view)."""
        view = object.__new__(type(self))
        view.__dict__.update(self.__dict__)
        view._guard = GenerationGuard()
        view._view_closed = threading.Event()
        self._tally.opened(view)
        return view

    def servers(self) -> list[ServerStatus]:
        """This one server: its sessions (views open), turns running, and failures (Backend.servers)."""
        return [self._tally.status(self.options.endpoint, self.parallel)]

    # -- the Backend protocol -------------------------------------------------------

    def count_tokens(self, messages: list[dict[str, str]], think: ThinkBudget) -> int:
        return estimate_tokens(messages)

    def generate(
        self,
        messages: list[dict[str, str]],
        *,
        sampling: SamplingConfig,
        think: ThinkBudget,
        seed: int,
        cancel: threading.Event | None = None,
    ) -> Iterator[GenerationEvent]:
        if self._closed.is_set() or (self._view_closed is not None and self._view_closed.is_set()):
            raise GenerationError("The connection to the server was closed.", "Load the model again to run another turn.")
        with self._guard.hold(), self._tally.turn():
            stop = EitherEvent(cancel, self._view_closed, self._closed)
            if self._gate is None:
                yield from self._generate(messages, sampling, think, seed, stop)
                return
            entered = self._gate.enter(stop.is_set)  # cancelled while waiting: no request is sent
            try:
                yield from self._generate(messages, sampling, think, seed, stop)
            finally:
                if entered:
                    self._gate.leave()

    def close(self) -> None:
        """A view: stop its own generation in flight. The backend: stop every view's and
        release the connections."""
        (self._closed if self._view_closed is None else self._view_closed).set()
        self._tally.closed(self)
        self._guard.wait_idle(5.0)
        if self._view_closed is None:
            self._client.close()

    # -- one answer -----------------------------------------------------------------

    def _request(self, messages: list[dict[str, str]], sampling: SamplingConfig, think: ThinkBudget,
                 seed: int, *, max_tokens: int | None, continuing: bool = False) -> dict[str, Any]:
        extra: dict[str, Any] = {
            **self._usage_extra,
            "top_k": sampling.top_k, "min_p": sampling.min_p,
            # Qwen3.5-family templates turn thinking off with this flag (vLLM, SGLang, llama-server).
            "chat_template_kwargs": {"enable_thinking": think.mode != "off"},
        }
        if continuing:
            extra.update(continue_final_message=True, add_generation_prompt=False)
        request: dict[str, Any] = dict(
            model=self.options.api_model, messages=messages, stream=True, temperature=sampling.temperature,
            top_p=sampling.top_p, seed=seed, stream_options=self._usage_options, extra_body=extra,
        )
        if max_tokens is not None:
            request["max_tokens"] = max_tokens
        return request

    def _max_tokens(self, sampling: SamplingConfig, think: ThinkBudget) -> int | None:
        """The server-side cap: the answer rules end the turn themselves, this only bounds a
        runaway; with thinking left to the model, only the context bounds it."""
        if sampling.max_tokens_counts_thinking:
            return sampling.max_tokens
        if think.mode == "off":
            return sampling.max_tokens
        if think.mode == "budget":
            return (think.tokens or 0) + sampling.max_tokens + _SLACK_TOKENS
        return None

    def _within_context(self, cap: int | None, messages: list[dict[str, str]], asked: int) -> int | None:
        """`cap`, lowered to what the known context leaves after the prompt (estimated); a
        request with no cap stays without (the server bounds it by its context itself).
        RequestRefused when the prompt leaves nothing. `asked`: the answer's --max-tokens."""
        if not self.context_known:
            return cap
        prompt = estimate_tokens(messages)
        room = self.info.n_ctx - prompt
        if room < 1:
            where = (f"the server's context of {self.info.n_ctx:,} tokens" if self.facts.n_ctx
                     else f"the context of {self.info.n_ctx:,} tokens that --ctx gives")
            raise RequestRefused(
                f"The conversation (~{prompt:,} tokens, awl's estimate) leaves no room for an answer "
                f"(--max-tokens {asked}) in {where}.",
                overflow_hint(messages, SERVE_LARGER),
            )
        return None if cap is None else min(cap, room)

    def _generate(self, messages: list[dict[str, str]], sampling: SamplingConfig, think: ThinkBudget,
                  seed: int, cancel: Any) -> Iterator[GenerationEvent]:
        started = time.perf_counter()
        if think.mode == "budget" and not self.facts.continues_answers:
            think = ThinkBudget("full")  # said once at load: this server cannot stop and continue
        stats = GenerationStats(prompt_tokens_total=estimate_tokens(messages))
        stats.prompt_tokens_evaluated = stats.prompt_tokens_total
        served = ServedCounts()
        answer = AnswerStream(think=think, sampling=sampling, stats=stats, server_separates=self.server_separates)
        cap = self._within_context(self._max_tokens(sampling, think), messages, sampling.max_tokens)
        request = self._request(messages, sampling, think, seed, max_tokens=cap)
        finish = yield from self._stream(request, answer, stats, served, cancel)
        if finish == "budget":
            yield from answer.end_thinking()
            assistant = {"role": "assistant", "content": THINK_OPEN + "\n" + answer.thinking_text + FORCED_THINK_END}
            continued = [*messages, assistant]
            cap = self._within_context(sampling.max_tokens + _SLACK_TOKENS, continued, sampling.max_tokens)
            request = self._request(continued, sampling, think, seed, max_tokens=cap, continuing=True)
            served.next_request()
            finish = yield from self._stream(request, answer, stats, served, cancel, continuation=True)
        self.server_separates = answer.server_separates
        yield from answer.finish(finish)
        served.apply(stats)
        stats.finish = finish
        stats.prompt_s = stats.prompt_s or (time.perf_counter() - started)
        stats.generate_s = max(time.perf_counter() - started - stats.prompt_s, 1e-6)
        yield GenerationDone(raw_output=answer.raw, think_open=answer.think_open, stats=stats)

    def _stream(self, request: dict[str, Any], answer: AnswerStream, stats: GenerationStats, served: ServedCounts,
                cancel: Any, *, continuation: bool = False) -> Iterator[GenerationEvent]:
        """Stream one request into `answer`; returns how it ended: stop, length, cancelled,
        repetition, or budget (the thinking budget is spent: a continuation follows)."""
        if cancel.is_set():
            return "cancelled"
        started = time.perf_counter()
        stream = self._open(request, continuation)
        finish = None  # set by the server's finish_reason: a stream that ends without one was cut
        first = True
        room = self._room(request)
        with _closed_on(cancel, stream) as tail_due:
            chunks = iter(stream)
            while True:
                try:
                    chunk = next(chunks)
                except StopIteration:
                    if finish is None and not cancel.is_set():
                        if first:
                            raise self._not_a_stream(stream, request["messages"]) from None
                        raise self._broken(EOFError("the answer ended before the server finished it"), stream) from None
                    break
                except Exception as error:  # noqa: BLE001 - reading the stream: the transport's errors vary
                    if cancel.is_set():
                        return "cancelled"
                    if finish is not None:  # the message had ended: only its tail was lost (or cut at _TAIL_S)
                        break
                    raise self._broken(error, stream) from None
                if first and not continuation:
                    stats.prompt_s = time.perf_counter() - started
                first = False
                if cancel.is_set():
                    return "cancelled"
                counted = served.read(chunk)
                for choice in chunk.choices[:1]:
                    room -= yield from self._take(choice.delta, answer, room)
                    if room < 0:
                        self._notice(f"The server at {self.options.endpoint} sent more text than "
                                     f"{request.get('max_tokens') or self.info.n_ctx:,} tokens hold in one answer; "
                                     "awl cut it there (finish: length).")
                        return "length"
                    if choice.finish_reason:
                        finish = "length" if choice.finish_reason == "length" else "stop"
                        tail_due()
                    rules = answer.rules
                    if rules is not None and rules.finish:
                        tail_due()
                        _read_tail(chunks, served, cancel, counted=counted, ended=finish is not None)
                        return rules.finish
                    if rules is not None and rules.budget_spent and not continuation:
                        return "budget"
        return "cancelled" if cancel.is_set() else finish

    def _open(self, request: dict[str, Any], continuation: bool) -> Any:
        """The server's stream for `request`. A server that refuses the new tokens asked as more
        than its context leaves, and says how many it leaves, is asked once more for those."""
        for again in (True, False):
            try:
                return self._client.stream_chat(request)
            except openai.BadRequestError as error:
                left = room_left(error) if again and asks_too_many_tokens(error) else None
                if left is not None and 0 < left < (request.get("max_tokens") or left + 1):
                    request["max_tokens"] = left
                    continue
                if continuation and not is_context_overflow(error):
                    raise GenerationError(
                        f"The server at {self.options.endpoint} refuses to continue an answer "
                        f"({error.status_code}), so the thinking budget cannot be honoured there.",
                        "Use `--think full` (the model decides) or `--think off` with this server.",
                    ) from None
                raise describe_error(error, self.options, models=self.facts.models,
                                     messages=request["messages"]) from None
            except openai.OpenAIError as error:
                raise stopped_or(describe_error(error, self.options, models=self.facts.models,
                                                 messages=request["messages"]), error, self.options) from None
        raise AssertionError("unreachable")  # the second try returns or raises

    def _room(self, request: dict[str, Any]) -> int:
        """Characters this request's answer may bring: its token cap (the context when it has
        none) at CHARS_PER_TOKEN. A 10 MB chunk under --max-tokens 64 is cut, not recorded."""
        return (request.get("max_tokens") or self.info.n_ctx) * CHARS_PER_TOKEN

    def _take(self, delta: Any, answer: AnswerStream, room: int) -> Iterator[GenerationEvent]:
        """Feed one delta within `room` characters; returns the characters it brought (more
        than `room`: it was cut at `room`)."""
        extra = getattr(delta, "model_extra", None) or {}
        reasoning = extra.get("reasoning_content") or extra.get("reasoning")
        brought = 0
        for text, feed in ((reasoning, answer.thinking), (delta.content, answer.text)):
            if isinstance(text, str) and text:
                if room - brought > 0:
                    yield from feed(text[: room - brought])
                brought += len(text)
        return brought

    def _not_a_stream(self, stream: Any, messages: list[dict[str, str]]) -> GenerationError:
        """The server answered 200 with no event at all: a JSON answer or a web page; or an event
        stream it closed at once, which a prompt too long for its context explains where the
        prompt is near the context (llama-cpp-python's server fails such a prompt that way)."""
        response = getattr(stream, "response", None)
        kind = str(getattr(response, "headers", {}).get("content-type", "")).split(";")[0].strip().lower()
        if "event-stream" in kind or not kind:
            prompt = estimate_tokens(messages)
            if self.context_known and prompt >= self.info.n_ctx * NEAR_CONTEXT_SHARE:
                context = f" of {self.info.n_ctx:,} tokens" + ("" if self.facts.n_ctx else " (--ctx)")
            elif not self.context_known and self.facts.kind == ONE_AT_A_TIME:
                context = " (it does not say its context: give it with --ctx)"
            else:
                return self._broken(EOFError("the answer ended before its first piece"), stream)
            return GenerationError(
                f"The server at {server_name(self.options, response)} closed the answer before its first piece: the "
                f"prompt (~{prompt:,} tokens, awl's estimate) may not fit the server's context{context}; this turn "
                "was not saved.",
                overflow_hint(messages, SERVE_LARGER) + " Its log says why.",
            )
        named = "JSON" if "json" in kind else "an HTML page" if "html" in kind else kind
        return GenerationError(
            f"The server at {server_name(self.options, response)} answered {named}, not an event stream "
            "(a streamed chat completion); this turn was not saved.",
            "Check that --base-url is the API root, ending in /v1 (e.g. http://127.0.0.1:8000/v1), "
            "and that the server streams chat completions.",
        )

    def _broken(self, error: Exception, stream: Any = None) -> GenerationError:
        """The stream failed after it began (the server died, the network dropped): ServerStopped."""
        if isinstance(error, openai.OpenAIError):
            described = describe_error(error, self.options, models=self.facts.models)
            return ServerStopped(described.message, described.hint, cause=failure_cause(described.message, self.options))
        cause = " ".join(str(error).split())[:200] or type(error).__name__
        timed_out = "timeout" in type(error).__name__.lower() or "timed out" in cause.lower()
        what = f"sent nothing for {self.options.timeout_s:g} seconds" if timed_out else f"stopped mid-answer ({cause})"
        hint = "Check that the server is still running, then send the action again."
        if self.parallel > 1 and not timed_out and self.facts.kind == "openai":  # a server awl does not know
            hint = ("Check that the server is still running; one that takes one request at a time cuts an answer when "
                    "another arrives: then run awl with --parallel 1 (awl serve) or --concurrency 1 (bench predict).")
        return ServerStopped(
            f"The server at {server_name(self.options, getattr(stream, 'response', None))} {what}; "
            "this turn was not saved.",
            hint, cause=what,
        )


def _read_tail(chunks: Iterator[Any], served: ServedCounts, cancel: Any, *, counted: bool, ended: bool) -> None:
    """Read on past the answer's end (its text is past the observation and not part of the
    answer): the usage chunk servers send last and, once the server has ended its message (a
    `finish_reason`: only usage and `[DONE]` follow), the stream's end, so that its connection
    goes back to the pool for the next turn (a stream closed part-read drops its connection, and
    the next turn connects anew), and the server is done with the request before the turn gives
    its place back. A server that runs on past the answer is cut after _TAIL_CHUNKS chunks, or,
    once its usage is read (vLLM and SGLang report it in every chunk), at the first chunk that
    does not end its message. A failure here loses only the counts."""
    with contextlib.suppress(Exception):  # StopIteration too: the stream's end
        for _ in range(_TAIL_CHUNKS):
            if cancel.is_set():
                return
            chunk = next(chunks)
            had_usage = counted
            counted = served.read(chunk) or counted
            ended = ended or any(choice.finish_reason for choice in chunk.choices)
            if had_usage and not ended:
                return


class _Watcher:
    """One thread that closes each stream in flight as soon as its cancel is set or its deadline
    passes (a read blocked on the socket then ends), for every stream of the process: a thread per stream,
    each waking every _WATCH_S, cost hundreds of wake-ups a second with hundreds of turns in
    flight. It runs while a stream is open, and ends when none is."""

    def __init__(self) -> None:
        self._forget()

    def _forget(self) -> None:
        """Nothing watched, no thread. Also in a forked child, where the watching thread is gone."""
        self._lock = threading.Lock()
        self._streams: dict[int, list[Any]] = {}  # key -> [cancel, stream, deadline or None]
        self._next = 0
        self._running = False

    def add(self, cancel: Any, stream: Any) -> int:
        with self._lock:
            self._next += 1
            self._streams[self._next] = [cancel, stream, None]  # None: no deadline
            if not self._running:
                self._running = True
                threading.Thread(target=self._watch, name="awl-remote-cancel", daemon=True).start()
            return self._next

    def remove(self, key: int) -> None:
        with self._lock:
            self._streams.pop(key, None)

    def end_by(self, key: int, seconds: float) -> None:
        """Close the stream `seconds` from now unless it is done by then (a deadline set once)."""
        with self._lock:
            entry = self._streams.get(key)
            if entry is not None and entry[2] is None:
                entry[2] = time.monotonic() + seconds

    def _watch(self) -> None:
        while True:
            time.sleep(_WATCH_S)
            with self._lock:
                if not self._streams:
                    self._running = False
                    return
                watched = list(self._streams.items())  # looked at outside the lock: streams come and go meanwhile
            now = time.monotonic()
            cancelled = [key for key, (cancel, _, due) in watched
                         if cancel.is_set() or (due is not None and now >= due)]
            if cancelled:
                with self._lock:
                    shut = [self._streams.pop(key)[1] for key in cancelled if key in self._streams]
                for stream in shut:
                    _shut(stream)


_WATCHER = _Watcher()
if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_WATCHER._forget)


@contextlib.contextmanager
def _closed_on(cancel: Any, stream: Any) -> Iterator[Callable[[], None]]:
    """Close `stream` as soon as `cancel` is set (a read blocked on the socket then ends),
    and always when the block ends (an early stop frees the server's slot). What it gives,
    called once the server's message has ended, closes the stream _TAIL_S later if it is
    still open then."""
    key = _WATCHER.add(cancel, stream)
    try:
        yield lambda: _WATCHER.end_by(key, _TAIL_S)
    finally:
        _WATCHER.remove(key)
        with contextlib.suppress(Exception):
            stream.close()


def _shut(stream: Any) -> None:
    """End a read blocked on the socket now: a close from another thread waits for it, a
    socket shutdown does not (the server sees the connection go, and stops)."""
    with contextlib.suppress(Exception):
        network = stream.response.extensions["network_stream"]
        network.get_extra_info("socket").shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(Exception):
        stream.close()
