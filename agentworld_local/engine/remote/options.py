"""What the remote backend needs to reach a server, checked before anything connects.

The API key is read from an environment variable the user names; only the variable's name
travels in these options, so the key is never written to a trajectory, a log or a message.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
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
    base_url: str
    api_model: str
    #: The environment variable holding the key; None: OPENAI_API_KEY if set, else no key.
    api_key_env: str | None = None
    #: Seconds to wait for the server to connect or send the next piece of an answer.
    timeout_s: float = DEFAULT_TIMEOUT_S
    #: Retries (with backoff) after a connection error, a 429 or a 5xx, before the answer starts.
    retries: int = DEFAULT_RETRIES

    def __post_init__(self) -> None:
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InputError(
                f"--base-url {endpoint_label(self.base_url)!s} is not an http(s) URL.",
                "Give the server's OpenAI API root, e.g. `--base-url http://127.0.0.1:8000/v1`.",
            )
        if not self.api_model.strip():
            raise InputError("--api-model is empty.", "Name the served model, e.g. `--api-model Qwen/Qwen-AgentWorld-35B-A3B`.")
        if self.timeout_s <= 0:
            raise InputError(f"--timeout {self.timeout_s:g} must be more than 0 seconds.", "E.g. `--timeout 600`.")
        if self.retries < 0:
            raise InputError(f"--retries {self.retries} cannot be negative.", "Use `--retries 0` for none.")

    @property
    def spec(self) -> str:
        """The one-text form a model field takes (the TUI's start screen): `openai:NAME@URL`."""
        return f"{SPEC_PREFIX}{self.api_model}@{self.endpoint}"

    @classmethod
    def from_spec(cls, text: str, **options: Any) -> "RemoteOptions":
        """`openai:NAME@URL` (see `spec`); InputError when it is not that form."""
        body = text[len(SPEC_PREFIX):] if text.startswith(SPEC_PREFIX) else ""
        at = max(body.rfind("@http://"), body.rfind("@https://"))
        if at <= 0:
            raise InputError(f"`{text}` is not a server model.",
                             "Write it as openai:MODEL@URL, e.g. openai:Qwen/Qwen-AgentWorld-35B-A3B@http://127.0.0.1:8000/v1.")
        return cls(base_url=body[at + 1:], api_model=body[:at], **options)

    @property
    def endpoint(self) -> str:
        """The base URL without credentials: what trajectories and messages may show."""
        return endpoint_label(self.base_url)

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
