"""What the remote backend needs to reach a server, checked before anything connects.

The API key is read from an environment variable the user names; only the variable's name
travels in these options, so the key is never written to a trajectory, a log or a message.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from agentworld_local.errors import InputError

#: `--backend` values.
LOCAL = "llama"
OPENAI = "openai"
BACKENDS = (LOCAL, OPENAI)
#: A server's model written as one text, where a face has one field for the model.
SPEC_PREFIX = "openai:"
#: Read when no `--api-key-env` is given; local servers need no key, so it may be unset.
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
#: What the official client sends when there is no key (servers without auth ignore it).
NO_KEY = "EMPTY"
DEFAULT_TIMEOUT_S = 600.0
DEFAULT_RETRIES = 3
#: Turns sent at once to a server that does not say how many it decodes together (vLLM):
#: enough for a few agents side by side, few enough for any server to take.
DEFAULT_SERVER_PARALLEL = 4
#: Turns sent at once to a server that batches many but does not say how many (vLLM's
#: --max-num-seqs is 256 or more; SGLang's max_running_requests unset): enough for a
#: benchmark or a training run's sessions to share its batches.
BATCHING_SERVER_PARALLEL = 16
#: The defaults of remote/server_kinds.py, for help texts (which must not import openai).
SERVER_PARALLEL_DEFAULTS = (f"{BATCHING_SERVER_PARALLEL} for vLLM and SGLang, 1 for llama-cpp-python's server "
                            f"(it cuts an answer when another request arrives), else {DEFAULT_SERVER_PARALLEL}")


@dataclass(frozen=True)
class RemoteOptions:
    """One server's model, or a fleet's: `base_url` may be given as a list of API roots (the
    same model on each; `--base-url` given again), kept as the first in `base_url` and the
    rest in `more_urls` (engine/remote/fleet.py sends each session to one of them)."""

    base_url: str
    api_model: str
    #: The environment variable holding the key; None: OPENAI_API_KEY if set, else no key.
    api_key_env: str | None = None
    #: Seconds to wait for the server to connect or send the next piece of an answer.
    timeout_s: float = DEFAULT_TIMEOUT_S
    #: Retries (with backoff) after a connection error, a 429 or a 5xx, before the answer starts.
    retries: int = DEFAULT_RETRIES
    #: The fleet's other servers (each another `--base-url`), in the order given.
    more_urls: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.base_url, str):  # a list of servers: the first, and the others
            urls = [*self.base_url, *self.more_urls] if isinstance(self.base_url, Sequence) else [self.base_url]
            if not urls:
                raise InputError("--base-url is empty.", "Give the server's OpenAI API root, e.g. `--base-url http://127.0.0.1:8000/v1`.")
            object.__setattr__(self, "base_url", urls[0])
            object.__setattr__(self, "more_urls", tuple(urls[1:]))
        object.__setattr__(self, "more_urls", tuple(self.more_urls))
        seen: dict[str, str] = {}
        for url in self.urls:
            if not isinstance(url, str):
                raise InputError(f"--base-url {url!r} is not a URL.", "Give each server's API root as text, e.g. http://127.0.0.1:8000/v1.")
            parts = urlsplit(url)
            try:
                parts.port  # noqa: B018 - a port that is not a number raises here
            except ValueError:
                parts = parts._replace(scheme="")
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise InputError(
                    f"--base-url {_shown_url(url)} is not an http(s) URL.",
                    "Give the server's OpenAI API root, e.g. `--base-url http://127.0.0.1:8000/v1`.",
                )
            key = _same_server(url)
            if key in seen:
                raise InputError(f"--base-url {endpoint_label(url)} is given twice.",
                                 "Give each server once (a server that takes more turns at once says so itself, "
                                 "or takes --parallel N).")
            seen[key] = url
        if not self.api_model.strip():
            raise InputError("--api-model is empty.", "Name the served model, e.g. `--api-model Qwen/Qwen-AgentWorld-35B-A3B`.")
        if self.timeout_s <= 0:
            raise InputError(f"--timeout {self.timeout_s:g} must be more than 0 seconds.", "E.g. `--timeout 600`.")
        if self.retries < 0:
            raise InputError(f"--retries {self.retries} cannot be negative.", "Use `--retries 0` for none.")

    @property
    def urls(self) -> tuple[str, ...]:
        """Every server's API root: one, or a fleet's several."""
        return (self.base_url, *self.more_urls)

    def servers(self) -> tuple["RemoteOptions", ...]:
        """One set of options per server (each with its own URL, the rest alike)."""
        return tuple(replace(self, base_url=url, more_urls=()) for url in self.urls)

    @property
    def spec(self) -> str:
        """The one-text form a model field takes (the TUI's start screen): `openai:NAME@URL`, a
        fleet's URLs joined by commas (`openai:NAME@URL1,URL2`)."""
        return f"{SPEC_PREFIX}{self.api_model}@{','.join(endpoint_label(url) for url in self.urls)}"

    @classmethod
    def from_spec(cls, text: str, **options: Any) -> "RemoteOptions":
        """`openai:NAME@URL` or `openai:NAME@URL1,URL2,...` (see `spec`); InputError when it is
        not that form."""
        body = text[len(SPEC_PREFIX):] if text.startswith(SPEC_PREFIX) else ""
        starts = [match.start() for match in re.finditer(r"@https?://", body)]
        # The name ends at the first `@http` that the URLs follow (a name may hold an `@`).
        at = next((start for start in starts if all(re.match(r"https?://", url)
                                                     for url in _split_urls(body[start + 1:]))), -1)
        if at <= 0:
            raise InputError(f"`{text}` is not a server model.",
                             "Write it as openai:MODEL@URL, e.g. openai:Qwen/Qwen-AgentWorld-35B-A3B@http://127.0.0.1:8000/v1.")
        return cls(base_url=_split_urls(body[at + 1:]), api_model=body[:at], **options)

    @property
    def endpoint(self) -> str:
        """The base URL without credentials: what trajectories and messages may show; a fleet's
        is its first server's and how many more (`http://a:8000/v1 +2`)."""
        first = endpoint_label(self.base_url)
        return f"{first} +{len(self.more_urls)}" if self.more_urls else first

    def api_key(self) -> str:
        """The key from the named environment variable (NO_KEY when the default one is unset)."""
        name = self.api_key_env or DEFAULT_KEY_ENV
        value = os.environ.get(name, "")
        if value:
            return value
        if self.api_key_env is not None:
            raise InputError(
                f"The environment variable {name} (named by --api-key-env) is not set.",
                f"Set it to the server's API key, e.g. `export {name}=...`, or drop --api-key-env for a server without keys.",
            )
        return NO_KEY


def _shown_url(url: str) -> str:
    """`url` as an error may name it: without credentials or query, even where it cannot be read
    as a URL (a port that is not a number), and at most 120 characters."""
    label = endpoint_label(url)
    if label != "(an unreadable URL)" and urlsplit(url).hostname:
        return label
    text = re.sub(r"//[^/@]*@", "//", " ".join(url.split()).split("?")[0].split("#")[0])
    return f"`{text[:120]}{'...' if len(text) > 120 else ''}`"


def _split_urls(text: str) -> list[str]:
    """A spec's URLs: split at each comma that starts another http(s) URL."""
    return re.split(r",(?=https?://)", text)


def _same_server(url: str) -> str:
    """What two spellings of one server's API root share (case of the host, a trailing `/`)."""
    parts = urlsplit(url.strip())
    return f"{parts.scheme.lower()}://{(parts.hostname or '').lower()}:{parts.port}{parts.path.rstrip('/')}"


def endpoint_label(url: str) -> str:
    """`url` without user, password, query or fragment (where keys sometimes ride along)."""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(an unreadable URL)"
    if ":" in host:
        host = f"[{host}]"
    return urlunsplit((parts.scheme, host + port, parts.path.rstrip("/"), "", ""))
