"""What awl assumes of a server by its kind (client.ServerFacts.kind), and what it says at connect.

* Capacity: the turns awl sends at once are the server's own count where it says one
  (llama-server's slots, SGLang's `max_running_requests`), bounded by `--parallel`. A server
  that says none gets a default that fits its kind: vLLM and SGLang batch many requests
  (BATCHING_SERVER_PARALLEL); llama-cpp-python's server takes one at a time and, by default
  (`--interrupt_requests`), cuts the answer in flight when another request arrives, so it
  gets one; any other server DEFAULT_SERVER_PARALLEL. `--parallel` overrides each default.
* A hybrid model (recurrent + attention layers: Qwen3.5-MoE, Qwen-AgentWorld, Qwen3-Next) on
  an engine whose prefix cache cannot reuse its conversations (vLLM: vllm-project/vllm#51198,
  #51250; llama-cpp-python's server) costs the whole conversation every turn: said once, with
  how to check it.
"""

from __future__ import annotations

import collections
import re
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from agentworld_local.engine.remote.client import ServerFacts, make_client, server_facts
from agentworld_local.engine.remote.options import BATCHING_SERVER_PARALLEL, DEFAULT_SERVER_PARALLEL, RemoteOptions
from agentworld_local.errors import AwlError, InputError

#: llama-cpp-python's own server (`python -m llama_cpp.server`): one request at a time.
ONE_AT_A_TIME = "llama-cpp-python"

LABELS = {"vllm": "vLLM", "sglang": "SGLang", "llama-server": "llama-server", ONE_AT_A_TIME: "llama-cpp-python's server"}

#: What a hybrid model's name or path says (llama.cpp's `qwen35moe`, Hugging Face's
#: `Qwen3_5MoeForCausalLM`, Qwen/Qwen-AgentWorld-35B-A3B, Qwen3-Next-80B-A3B, Qwen3.5-*).
_HYBRID = re.compile(r"qwen[-_ ]?3[._-]?5|qwen[-_ ]?3[._-]?next|agent[-_ ]?world", re.IGNORECASE)

#: The engines whose prefix cache does not reuse a hybrid model's conversation, and how to see it.
_NO_REUSE = {
    "vllm": ("vLLM's prefix cache does not reuse its conversations (vllm-project/vllm#51198, #51250)",
             "the server's prefix-cache hit rate, vllm:prefix_cache_hits_total over vllm:prefix_cache_queries_total "
             "at {root}/metrics, stays near 0"),
    ONE_AT_A_TIME: ("llama-cpp-python's server evaluates its whole prompt on every request",
                    "the server's log shows a prompt eval of the whole conversation each turn"),
}


def label(facts: ServerFacts) -> str:
    """The server's kind in words, for notices ("" for one awl does not know)."""
    return LABELS.get(facts.kind, "")


def default_parallel(kind: str) -> int:
    """Turns sent at once to a server of `kind` that does not say its count."""
    if kind == ONE_AT_A_TIME:
        return 1
    if kind in ("vllm", "sglang"):
        return BATCHING_SERVER_PARALLEL
    return DEFAULT_SERVER_PARALLEL


def capacity(facts: ServerFacts, parallel: int | None, endpoint: str) -> tuple[int, str | None]:
    """(turns sent at once, the notice that says it or None): the server's count bounded by
    the user's `--parallel`, else `--parallel`, else the default of the server's kind."""
    if parallel is not None and parallel < 1:
        raise InputError(f"--parallel {parallel} must be at least 1.", "E.g. `--parallel 4`.")
    server = facts.parallel
    if server is not None:
        if parallel is not None and parallel > server:
            return server, (f"The server at {endpoint} decodes {server} requests at once; "
                            f"awl sends that many, not --parallel {parallel}.")
        return min(server, parallel or server), None
    if facts.kind == ONE_AT_A_TIME:
        if parallel is None:
            return 1, (f"The server at {endpoint} is llama-cpp-python's server, which takes one request at a time "
                       "and cuts the answer in flight when another arrives: awl sends it one turn at a time, "
                       "the others wait in awl.")
        if parallel > 1:
            return parallel, (f"The server at {endpoint} is llama-cpp-python's server: awl sends it {parallel} turns at "
                              "once (--parallel), which cuts each answer in flight unless it runs with "
                              "--interrupt_requests false.")
        return parallel, None
    if parallel is not None:
        return parallel, None
    default = default_parallel(facts.kind)
    kind = label(facts)
    why = f"{kind} batches many, so " if kind else ""
    return default, (f"The server at {endpoint} does not say how many requests it decodes at once; {why}awl sends up "
                     f"to {default} turns at once (--parallel N to change).")


def serves_hybrid(facts: ServerFacts) -> bool:
    """Whether what the server says of its model names a hybrid (recurrent + attention) one."""
    return any(_HYBRID.search(name) for name in facts.names)


def prefix_cache_notice(facts: ServerFacts, base_url: str, endpoint: str) -> str | None:
    """The one notice for a hybrid model on an engine whose prefix cache cannot reuse it: what
    each turn costs and how to check it; None elsewhere."""
    if facts.kind not in _NO_REUSE or not serves_hybrid(facts):
        return None
    why, check = _NO_REUSE[facts.kind]
    return (f"The server at {endpoint} serves a hybrid model (recurrent and attention layers, as Qwen3.5-MoE), and "
            f"{why}: every turn evaluates the whole conversation again, so a turn's prompt costs all the turns "
            f"before it, not only its new tokens. To check: {check.format(root=server_root(base_url))}, and the "
            "prompt tokens awl shows evaluated each turn grow with the conversation.")


def server_root(base_url: str) -> str:
    """The server's root beside its API (`http://host:8000/v1` -> `http://host:8000`), without credentials."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return urlunsplit((parts.scheme, host + port, re.sub(r"/v\d+/?$", "", parts.path.rstrip("/")), "", ""))


class TurnGate:
    """At most `slots` turns at once, the rest waiting in order (a server that must never see more
    requests at once, one that cuts an answer when another arrives; a fleet server's places). The
    runner already keeps to the backend's `parallel`; this holds for every other caller too
    (bench predict's --concurrency) and for a fleet, whose sessions stay on their server.

    A turn that leaves hands its slot straight to the first waiting one, which alone is woken: a
    wake-up of every waiter at each leave (hundreds, with a fleet's thousands of episodes) cost
    more CPU than the turns. A waiter looks at `cancelled` every `poll_s`."""

    def __init__(self, slots: int, poll_s: float) -> None:
        self._poll_s = poll_s
        self._free = slots
        self._waiting: collections.deque[threading.Event] = collections.deque()
        self._lock = threading.Lock()

    def enter(self, cancelled: Callable[[], bool]) -> bool:
        """Wait for a slot, first come first served; False (no slot taken) when cancelled first."""
        with self._lock:
            if self._free > 0 and not self._waiting:
                self._free -= 1
                return True
            handed = threading.Event()
            self._waiting.append(handed)
        while not handed.wait(0 if cancelled() else self._poll_s):
            if cancelled():
                with self._lock:
                    if not handed.is_set():  # still waiting: leave the line
                        self._waiting.remove(handed)
                        return False
                self.leave()  # a slot was handed over meanwhile: pass it on
                return False
        return True

    def leave(self) -> None:
        with self._lock:
            if self._waiting:
                self._waiting.popleft().set()  # the slot goes to the first in line, taken
            else:
                self._free += 1


def server_report(options: RemoteOptions) -> dict[str, Any]:
    """What `awl doctor` says of a server, as plain data: what it is, its context, the turns awl
    would send it at once, and the notices a connect prints (the same words); `error`, one line,
    where it cannot be asked."""
    report: dict[str, Any] = {"endpoint": options.endpoint, "model": options.api_model}
    try:
        client = make_client(options)
        try:
            facts = server_facts(client, options)
        finally:
            client.close()
    except AwlError as error:
        return {**report, "error": error.one_line()}
    parallel, said = capacity(facts, None, options.endpoint)
    notices = [text for text in (said, prefix_cache_notice(facts, options.base_url, options.endpoint)) if text]
    if facts.models and options.api_model not in facts.models:
        notices.insert(0, f"The server at {options.endpoint} does not serve `{options.api_model}`; it serves: "
                          f"{', '.join(facts.models[:10])}.")
    return {**report, "kind": facts.kind, "kind_label": label(facts) or "an OpenAI-compatible server",
            "served": facts.models, "context": facts.n_ctx, "parallel": parallel,
            "parallel_reported": facts.parallel is not None, "hybrid": serves_hybrid(facts), "notices": notices}
