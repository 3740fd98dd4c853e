"""An agent over any loaded model: an OpenAI-compatible server (`openai:NAME@URL`, through
engine/remote's backend and the official client), a second GGUF (LlamaBackend) or a scripted
model (`scripted:FILE`, for tests), all loaded by engine/loading.py as a world model is.

The model gets one thread of its own that loads it, generates with it and closes it (one owner
per loaded model, as the runner is for the world model): `propose` may be called from any
thread, and a cancel reaches the model at its next token.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from agentworld_local.agent.prompt import action_text, agent_messages, reask_message
from agentworld_local.agent.protocol import AgentHistory, OnText, Proposal
from agentworld_local.engine.types import AnswerChunk, BackendNotice, GenerationDone, SamplingConfig, ThinkBudget, ThinkingChunk
from agentworld_local.errors import AwlError, InputError
from agentworld_local.session.resume_rules import model_ref

#: An agent's answer is one action: short. Enough for a tool call with a file's content in it.
AGENT_MAX_TOKENS = 1024
#: How many times the agent model is asked for one action (the second ask carries the parser's reason).
ASKS = 2


def _load(spec: str, options: dict[str, Any], cancel: threading.Event, notice: Callable[[str], None] | None) -> Any:
    from agentworld_local.engine.loading import load_backend

    model = None if options.get("remote") is not None else spec  # a server's: its options carry the key variable
    return load_backend(model, progress=lambda fraction: not cancel.is_set(), notice=notice, **options)


def _remote(spec: str, key_env: str | None) -> Any:
    """A server agent's RemoteOptions (its key read from `key_env`, default OPENAI_API_KEY), or None."""
    from agentworld_local.engine.remote.options import SPEC_PREFIX, RemoteOptions

    if not spec.startswith(SPEC_PREFIX):
        if key_env is not None:
            raise InputError("A key variable only goes with an agent on a server (openai:MODEL@URL).",
                             "Drop the agent's key variable, or give a server's model.")
        return None
    return RemoteOptions.from_spec(spec, api_key_env=key_env)


def check_agent_spec(spec: str, key_env: str | None = None) -> None:
    """A mistake in an agent's spec, said before any model loads (a world model takes minutes)."""
    from agentworld_local.engine.loading import SCRIPTED

    remote = _remote(spec, key_env)
    if remote is not None:
        remote.api_key()  # a named variable that is not set
    elif spec.startswith(SCRIPTED):
        if not Path(spec[len(SCRIPTED):]).is_file():
            raise InputError(f"The agent's answer file {spec[len(SCRIPTED):]} does not exist.",
                             "Give an existing file after `scripted:`.")
    else:
        from agentworld_local.models.resolve import resolve_model

        resolve_model(spec)  # a missing file or an unknown name, with its next step


class ModelAgent:
    """See the module's doc. `spec`: what `--agent` takes (a registry name, a .gguf path,
    `openai:NAME@URL`, `scripted:FILE`); `load_options`: load_backend's (ctx, threads, ...)."""

    def __init__(self, spec: str, *, load_options: dict[str, Any] | None = None, temperature: float = 0.6,
                 think: str = "off", seed: int = 0, notice: Callable[[str], None] | None = None,
                 backend: Any = None, key_env: str | None = None) -> None:
        """`backend`: one loaded already (tests); it then belongs to the agent, which closes it.
        `key_env`: the environment variable with a server's key (default OPENAI_API_KEY when set)."""
        self.spec = spec
        self._owner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="awl-agent")
        self._stop = threading.Event()
        self._sampling = SamplingConfig(temperature=temperature, max_tokens=AGENT_MAX_TOKENS,
                                        stop_at_observation=False)
        self._think = ThinkBudget.parse(think)
        self._seed = seed
        self._asked = 0
        self._current = threading.Event()  # the cancel of the proposal in progress
        self._backend: Any = backend
        if backend is None:
            # One proposal at a time: one request at a time (said to no one as a capacity).
            options = {"parallel": 1, **(load_options or {}), "remote": _remote(spec, key_env)}
            try:
                self._backend = self._on_owner(lambda: _load(spec, options, self._stop, notice), self._stop)
            except BaseException:  # a failed or interrupted load leaves no thread behind
                self._owner.shutdown(wait=False)
                raise
        info = self._backend.info
        #: For the trajectory header: which model, where (a server's endpoint, never its key).
        self.identity: dict[str, Any] = {**model_ref(info).to_dict(), "backend": info.backend, "spec": _shown_spec(spec)}

    def propose(self, history: AgentHistory, *, on_text: OnText | None = None,
                cancel: threading.Event | None = None) -> Proposal:
        cancel = cancel or threading.Event()
        self._current = cancel  # a close stops it too
        return self._on_owner(lambda: self._propose(history, on_text, cancel), cancel)

    def close(self) -> None:
        """Stop what runs, then free the model on its own thread. A second close does nothing."""
        self._stop.set()
        self._current.set()
        if self._backend is not None:
            backend, self._backend = self._backend, None
            self._owner.submit(backend.close)
        self._owner.shutdown(wait=True)

    # -- on the owner thread ---------------------------------------------------------------

    def _on_owner(self, work: Callable[[], Any], cancel: threading.Event) -> Any:
        """Run `work` on the model's thread and wait; Ctrl+C while waiting stops it there too."""
        future = self._owner.submit(work)
        try:
            return future.result()
        except KeyboardInterrupt:
            cancel.set()
            raise

    def _fitting_messages(self, history: AgentHistory) -> list[dict[str, str]]:
        """The conversation, leaving out the oldest turns while it would not fit the agent
        model's context with room for its answer and a second ask."""
        room = self._backend.info.n_ctx - 2 * AGENT_MAX_TOKENS
        omitted = 0
        messages = agent_messages(history)
        while omitted < len(history.turns) and self._backend.count_tokens(messages, self._think) > room:
            omitted += 1
            messages = agent_messages(history, omitted=omitted)
        return messages

    def _propose(self, history: AgentHistory, on_text: OnText | None, cancel: threading.Event) -> Proposal:
        messages = self._fitting_messages(history)
        text = thinking = ""
        for ask in range(1, ASKS + 1):
            text, thinking, finish = self._ask(messages, ask, on_text, cancel)
            if finish == "cancelled":
                return Proposal(text, None, thinking, ask, cancelled=True)
            try:
                if finish in ("length", "repetition"):  # cut off: whatever it is, not one whole action
                    raise InputError(f"The answer ran on past {AGENT_MAX_TOKENS} tokens without ending.",
                                     "Answer with the action alone.")
                return Proposal(text, history.domain.parse_action(action_text(text)), thinking, ask)
            except AwlError as error:
                reason = f"{error.message} {error.hint or ''}".strip()
                messages = [*messages, {"role": "assistant", "content": text},
                            {"role": "user", "content": reask_message(error)}]
        return Proposal(text, None, thinking, ASKS, error=reason)

    def _ask(self, messages: list[dict[str, str]], ask: int, on_text: OnText | None,
             cancel: threading.Event) -> tuple[str, str, str]:
        """The answer, its thinking, and how it ended (GenerationStats.finish)."""
        if self._backend is None:
            raise AwlError("The agent model was closed.", "Start the agent again.")
        self._asked += 1
        answer: list[str] = []
        thinking: list[str] = []
        finish = "stop"
        for event in self._backend.generate(messages, sampling=self._sampling, think=self._think,
                                            seed=self._seed + self._asked, cancel=cancel):
            if isinstance(event, AnswerChunk):
                answer.append(event.text)
                if on_text is not None:
                    on_text(event.text, ask)
            elif isinstance(event, ThinkingChunk):
                thinking.append(event.text)
            elif isinstance(event, BackendNotice):  # the answer starts again (a fleet moved to another server)
                answer.clear()
                thinking.clear()
            elif isinstance(event, GenerationDone):
                finish = event.stats.finish
        return "".join(answer), "".join(thinking), "cancelled" if cancel.is_set() else finish


def _shown_spec(spec: str) -> str:
    """The spec as typed, or a server's without credentials its URL may carry."""
    from agentworld_local.engine.remote.options import SPEC_PREFIX, RemoteOptions

    return RemoteOptions.from_spec(spec).spec if spec.startswith(SPEC_PREFIX) else spec
