"""The official `openai` client for one server: creating it, what the server says about
itself, and each failure as one AwlError that names the next step."""

from __future__ import annotations

import json
import re
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import openai

from agentworld_local.engine.context_window import overflow_hint
from agentworld_local.engine.remote.chunks import Client
from agentworld_local.engine.remote.options import RemoteOptions, endpoint_label
from agentworld_local.errors import AwlError, GenerationError, ModelError, RequestRefused
from agentworld_local.safe_parse import SyntaxProblem, load_json

#: How servers word a prompt longer than their context (llama-cpp-python, vLLM, SGLang, llama-server).
_CONTEXT_OVERFLOW = re.compile(
    r"context (length|window|size)|maximum context|exceeds? the (available )?context|too many tokens", re.IGNORECASE
)
_PROBE_TIMEOUT_S = 5.0
#: A server's error text is shown, not trusted: long ones are cut.
_SHOWN_CHARS = 300


def make_client(options: RemoteOptions) -> openai.OpenAI:
    """Retries with exponential backoff (the client's own) on connection errors, 408, 409, 429, 5xx.
    Streamed chunks come as remote/chunks.py's `Chunk` (the client's typed models cost a turn's CPU)."""
    # The timeout as the client's own type: a number is checked against a typing Protocol on every request.
    return Client(base_url=options.base_url, api_key=options.api_key(), timeout=openai.Timeout(options.timeout_s),
                  max_retries=options.retries)


@dataclass(frozen=True)
class ServerFacts:
    """What the server tells about itself; None where it does not say."""

    models: list[str]
    #: Context one request may fill (vLLM `max_model_len`, a llama-server slot's `n_ctx`,
    #: SGLang's `context_length`; the training context only when nothing else is said).
    n_ctx: int | None
    #: Requests it decodes at once (llama-server slots, SGLang's running-request limit).
    parallel: int | None
    #: It continues an assistant message while thinking is on (False: llama-server refuses to).
    continues_answers: bool = True
    #: Which server it is, where it shows (llama-server's /props, SGLang's /get_server_info,
    #: vLLM's `max_model_len` in /v1/models, llama-cpp-python's server by its /openapi.json),
    #: else "openai": what each reports of its counts and capacity differs (remote/usage.py,
    #: remote/server_kinds.py).
    kind: str = "openai"
    #: What the server says the model is: its id, vLLM's `root`, llama-server's and SGLang's
    #: `model_path` (remote/server_kinds.py reads the architecture from them).
    names: tuple[str, ...] = ()


def server_facts(client: openai.OpenAI, options: RemoteOptions) -> ServerFacts:
    """The served models (AwlError when the server cannot be reached or refuses the key),
    then the optional facts of the known server types, each probe allowed to fail."""
    try:
        listed = client.models.with_raw_response.list()
    except openai.NotFoundError as error:
        # Every OpenAI-compatible server lists its models: a 404 is a --base-url off the API root.
        raise describe_error(error, options, models=[]) from None
    except openai.OpenAIError as error:
        raise describe_error(error, options) from None
    entries = _model_entries(listed, options)
    models = [entry.id for entry in entries]
    n_ctx = trained = parallel = None
    vllm = False
    names: list[Any] = [options.api_model]
    for entry in entries:
        if entry.id == options.api_model:
            extra = entry.model_extra or {}
            meta = extra.get("meta") or {}
            vllm = _positive(extra.get("max_model_len")) is not None
            n_ctx = _positive(extra.get("max_model_len")) or _positive(meta.get("n_ctx"))
            trained = _positive(meta.get("n_ctx_train"))
            names += [extra.get("root"), extra.get("parent")]
    props = _get_json(options, "/props") or {}  # llama-server
    settings = props.get("default_generation_settings") or {}
    # A slot's context (llama-server splits -c over -np slots), never the training one first:
    # planning with 32k where a slot holds 4k overflows the server mid-session.
    n_ctx = n_ctx or _positive(settings.get("n_ctx"))
    parallel = _positive(props.get("total_slots"))
    info: dict[str, Any] = {}
    if n_ctx is None or parallel is None:
        info = _get_json(options, "/get_server_info") or {}  # SGLang
        n_ctx = n_ctx or _positive(info.get("context_length"))
        parallel = parallel or _positive(info.get("max_running_requests"))
    n_ctx = n_ctx or trained
    names += [props.get("model_path"), info.get("model_path")]
    # Only llama-server answers /props with generation settings; it refuses an assistant
    # prefill while thinking is on, so a thinking budget cannot stop and continue there.
    llama_server = bool(props.get("default_generation_settings"))
    kind = "llama-server" if llama_server else "sglang" if info else "vllm" if vllm else "openai"
    if kind == "openai" and _is_llama_cpp_python(options):
        kind = "llama-cpp-python"
    return ServerFacts(models=models, n_ctx=n_ctx, parallel=parallel, continues_answers=not llama_server, kind=kind,
                       names=tuple(dict.fromkeys(name for name in names if isinstance(name, str) and name)))


def _is_llama_cpp_python(options: RemoteOptions) -> bool:
    """llama-cpp-python's own server (`python -m llama_cpp.server`): its OpenAPI document names
    it (and its /extras routes). Read there, not at /v1/models: every request to its model routes
    takes the model's lock, and a waiting one cuts the answer in flight."""
    document = _get_json(options, "/openapi.json") or {}
    info = document.get("info")
    title = str(info.get("title") or "") if isinstance(info, dict) else ""
    paths = document.get("paths")
    return "llama.cpp Python" in title or (isinstance(paths, dict) and "/extras/tokenize/count" in paths)


def _model_entries(listed: Any, options: RemoteOptions) -> list[Any]:
    """The models a /v1/models answer lists; a URL that answers something else there (a web
    page, an event stream, JSON of another shape or too deep to read) is one ModelError naming
    the URL and what it answered, never the client's own error from parsing it."""
    response = listed.http_response
    data = json_body(response)
    entries = data.get("data") if isinstance(data, dict) else None
    if isinstance(entries, list) and all(isinstance(item, dict) and isinstance(item.get("id"), str)
                                         for item in entries):
        return list(listed.parse())
    raise not_the_api(options, response, "/models", "lists its models as JSON", "no `data` list of models")


def json_body(response: Any) -> Any:
    """The JSON value of an HTTP answer's body; None when it is none (not JSON, too deep, empty)."""
    try:
        return load_json(response.content)
    except SyntaxProblem:
        return None


def not_the_api(options: RemoteOptions, response: Any, route: str, expected: str, shape: str) -> ModelError:
    """One line for an answer that is not what an OpenAI-compatible server sends at `route`:
    the URL and what came instead (a web page, an event stream, an empty body, text that is not
    JSON, JSON of another shape), never the body itself. `expected`: what such a server sends
    there; `shape`: what the JSON lacked."""
    kind = (response.headers.get("content-type") or "").split(";")[0].strip().lower()
    content = response.content
    try:
        load_json(content)
        reason = ""
    except SyntaxProblem as problem:
        reason = str(problem)
    if not content.strip():
        said = f"an empty body ({kind or 'no content type'})"
    elif "html" in kind or (reason and content.lstrip()[:1] == b"<"):
        said = f"a web page ({kind or 'no content type'})"
    elif "event-stream" in kind:
        said = f"an event stream ({kind})"
    elif reason:
        said = f"something that is not JSON ({kind or 'no content type'}: {reason})"
    else:
        said = f"JSON of another shape ({shape})"
    return ModelError(
        f"The server at {server_name(options, response)} answered {said} at {route}, where an OpenAI-compatible "
        f"server {expected}.",
        "Check --base-url: it is the API root of an OpenAI-compatible server, usually ending in /v1 "
        "(e.g. http://127.0.0.1:8000/v1).",
    )


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _get_json(options: RemoteOptions, path: str) -> dict[str, Any] | None:
    """GET `path` at the server's root (beside /v1), or None: these probes only add facts."""
    parts = urlsplit(options.base_url)
    root = re.sub(r"/v\d+/?$", "", parts.path.rstrip("/"))
    url = urlunsplit((parts.scheme, parts.netloc, root + path, "", ""))
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {options.api_key()}"})
    try:
        with urllib.request.urlopen(request, timeout=_PROBE_TIMEOUT_S) as response:  # noqa: S310 - the user's server
            data = json.loads(response.read(1 << 20))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def server_said(error: openai.APIStatusError) -> str:
    body = error.body
    text = ""
    if isinstance(body, dict):
        inner = body.get("error", body)
        text = str(inner.get("message") or inner.get("detail") or "") if isinstance(inner, dict) else str(inner)
    text = " ".join((text or error.message or "").split())
    return text[:_SHOWN_CHARS] + ("..." if len(text) > _SHOWN_CHARS else "")


def is_context_overflow(error: openai.APIStatusError) -> bool:
    return error.status_code in (400, 413, 422) and bool(_CONTEXT_OVERFLOW.search(server_said(error)))


def asks_too_many_tokens(error: openai.APIStatusError) -> bool:
    """The server refused the new tokens asked (`max_tokens`), not the prompt: vLLM's "'max_tokens'
    ... is too large: 4096", SGLang's and older vLLM's "... tokens for the completion"; not when
    the prompt alone fills the context (older vLLM words both the same)."""
    if not (is_context_overflow(error) and _TOO_MANY_NEW.search(server_said(error))):
        return False
    left = room_left(error)
    return left is None or left > 0


def room_left(error: openai.APIStatusError) -> int | None:
    """The new tokens the server's refusal says its context leaves (its context less the prompt's
    tokens, both as it counted them), or None where it does not say both."""
    text = server_said(error)
    context, prompt = _SAID_CONTEXT.search(text), _SAID_PROMPT.search(text)
    if context is None or prompt is None:
        return None
    return int(context.group(1)) - int(next(group for group in prompt.groups() if group))


#: Larger prompts than this share of the context (the server's known or --ctx) are said to
#: perhaps not fit when a server closes the answer before its first piece.
NEAR_CONTEXT_SHARE = 0.5
#: What a context refusal says of the new tokens asked, the context, and the prompt's tokens.
_TOO_MANY_NEW = re.compile(r"max_tokens|max_completion_tokens|max_new_tokens|(in|for) the completion", re.IGNORECASE)
_SAID_CONTEXT = re.compile(r"maximum context length (?:is |of )?(\d+)", re.IGNORECASE)
_SAID_PROMPT = re.compile(r"has (\d+) input tokens|\((\d+) in the messages|(\d+) tokens from the input", re.IGNORECASE)
#: The hint's first half when a conversation does not fit a server's context.
SERVE_LARGER = ("Serve the model with a larger context (vLLM --max-model-len, SGLang --context-length, llama-server -c, "
                "llama_cpp.server --n_ctx; --ctx N tells awl one the server does not report)")


def describe_error(error: Exception, options: RemoteOptions, *, models: list[str] | None = None,
                   messages: list[dict[str, str]] | None = None) -> AwlError:
    """One AwlError for an `openai` failure: what happened at which endpoint, and what to do.
    `messages`: the conversation sent, when a turn's (a refusal for its length then says the
    step that fits the turn: on turn 1 there is no earlier turn to fork at)."""
    where = f"The server at {server_name(options, getattr(error, 'response', None))}"
    key_env = options.api_key_env or "OPENAI_API_KEY"
    if isinstance(error, (openai.AuthenticationError, openai.PermissionDeniedError)):
        return ModelError(
            f"{where} refused the API key ({error.status_code}: {server_said(error)}).",
            f"Put the right key in the environment variable {key_env} (or name another with --api-key-env).",
        )
    if isinstance(error, openai.NotFoundError):
        served = models if models is not None else _models_or_none(options)
        if served:
            listed = ", ".join(served[:10]) + (", ..." if len(served) > 10 else "")
            return ModelError(
                f"{where} does not serve the model `{options.api_model}`; it serves: {listed}.",
                f"Use `--api-model {served[0]}`.",
            )
        return ModelError(
            f"{where} answered 404 (not found) where the OpenAI API should be ({server_said(error)}).",
            "Check --base-url: it is the API root, usually ending in /v1 (e.g. http://127.0.0.1:8000/v1).",
        )
    if isinstance(error, openai.APIStatusError) and asks_too_many_tokens(error):
        return RequestRefused(
            f"{where} refused to generate that many new tokens in its context ({server_said(error)}).",
            "Lower --max-tokens (or --think N), or give the server's context with --ctx N so awl asks for no more "
            "than it leaves.",
        )
    if isinstance(error, openai.APIStatusError) and is_context_overflow(error):
        return RequestRefused(
            f"The conversation is longer than the context of the model at {options.endpoint} ({server_said(error)}).",
            overflow_hint(messages, SERVE_LARGER) if messages is not None else f"{SERVE_LARGER}.",
        )
    if isinstance(error, openai.RateLimitError):
        return GenerationError(
            f"{where} is still busy (429) after {options.retries} retries ({server_said(error)}).",
            "Wait a little and run the same command again, or send fewer requests at once (--concurrency).",
        )
    if isinstance(error, (openai.BadRequestError, openai.UnprocessableEntityError)):
        return RequestRefused(
            f"{where} refused the request ({error.status_code}: {server_said(error)}).",
            "Check that it serves a chat model that takes these options; its log says more.",
        )
    if isinstance(error, openai.APIStatusError):
        again = f" after {options.retries} retries" if error.status_code >= 500 else ""
        return GenerationError(
            f"{where} failed with HTTP {error.status_code}{again} ({server_said(error)}).",
            "Check the server's log; then run the same command again.",
        )
    if isinstance(error, openai.APITimeoutError):
        return GenerationError(
            f"{where} did not answer within {options.timeout_s:g} seconds.",
            "Give it longer with --timeout, or check that it is not overloaded.",
        )
    if isinstance(error, openai.APIConnectionError):
        return GenerationError(
            f"Cannot reach the server at {options.endpoint} ({_cause(error)}).",
            "Check that the server is running and that --base-url is right, then try again.",
        )
    return GenerationError(f"{where} failed: {_cause(error)}.", "Check the server's log; then try again.")


def server_name(options: RemoteOptions, response: Any = None) -> str:
    """The endpoint, and where a followed redirect took the request (whose answer that was)."""
    try:
        redirected = bool(response.history)
        final = endpoint_label(str(response.url))
    except AttributeError:
        return options.endpoint
    return f"{options.endpoint} (redirected to {final})" if redirected and final != options.endpoint else options.endpoint


def _models_or_none(options: RemoteOptions) -> list[str] | None:
    try:
        return [entry.id for entry in make_client(options).models.list()]
    except (openai.OpenAIError, AwlError):
        return None


def _cause(error: BaseException) -> str:
    """The innermost cause's words (the client wraps transport errors)."""
    while error.__cause__ is not None:
        error = error.__cause__
    return " ".join(str(error).split())[:_SHOWN_CHARS] or type(error).__name__
