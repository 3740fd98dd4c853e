"""The options that choose a remote model, said once for every command that loads a model
(`run`, `play`, `demo`, `bench predict`): `@remote_model_options` adds them to a command and
hands it one `remote` argument, a RemoteOptions (None for a local model). Likewise
`@offload_model_options` adds where a local GGUF's experts go, flash attention and the KV
cache type, as one `offload` argument (an OffloadOptions, checked before anything loads)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import typer

from agentworld_local.engine.remote.options import BACKENDS, DEFAULT_RETRIES, DEFAULT_TIMEOUT_S, LOCAL, OPENAI, RemoteOptions
from agentworld_local.errors import InputError
from agentworld_local.models.offload_options import FLASH_ATTN_MODES, KV_TYPE_BYTES, SPECULATE_MODES, OffloadOptions

_OPTIONS = (
    ("backend", str, typer.Option(LOCAL, "--backend", help=f"Where the model runs: `{LOCAL}` (a GGUF in this process, --model) or `{OPENAI}` (an OpenAI-compatible server: vLLM, SGLang, llama-server; --base-url and --api-model).")),
    ("base_url", list[str], typer.Option(None, "--base-url", metavar="URL", help="With --backend openai: the server's API root, e.g. http://127.0.0.1:8000/v1. Give it again for each server of the same model (a fleet: each session is placed on the least-loaded server and stays there; a server that stops answering hands its sessions to the others; docs/remote.md).", show_default=False)),
    ("api_model", str, typer.Option(None, "--api-model", help="With --backend openai: the served model's name (as the server's /v1/models lists it).", show_default=False)),
    ("api_key_env", str, typer.Option(None, "--api-key-env", help="With --backend openai: the environment variable that holds the API key (default: OPENAI_API_KEY if set; local servers need none). The key itself is never written anywhere.", show_default=False)),
    ("timeout", float, typer.Option(DEFAULT_TIMEOUT_S, "--timeout", help="With --backend openai: seconds to wait for the server to connect or send the next piece of an answer.")),
    ("retries", int, typer.Option(DEFAULT_RETRIES, "--retries", help="With --backend openai: retries with backoff after a connection error, 429 or 5xx.")),
)


def remote_options(*, model: str | None, backend: str, base_url: str | list[str] | None, api_model: str | None,
                   api_key_env: str | None, timeout: float, retries: int) -> RemoteOptions | None:
    """The remote options the command line asks for, or None for a local model; InputError
    for a combination that cannot work (said before anything loads). `base_url`: one server's
    API root, or several (`--base-url` given again: a fleet)."""
    if isinstance(base_url, str):
        base_url = [base_url]
    if backend not in BACKENDS:
        raise InputError(f"Unknown --backend `{backend}`.", f"Use `--backend {LOCAL}` (a GGUF here) or `--backend {OPENAI}` (a server).")
    if backend == LOCAL:
        given = [flag for flag, value in (("--base-url", base_url), ("--api-model", api_model), ("--api-key-env", api_key_env)) if value]
        if given:
            raise InputError(f"{given[0]} is for a model on a server.", f"Add `--backend {OPENAI}`, or drop {given[0]}.")
        return None
    if model:
        raise InputError(f"--model names a local GGUF; with --backend {OPENAI} the server's model is --api-model.",
                         f"Drop --model and use `--api-model NAME`.")
    missing = [flag for flag, value in (("--base-url", base_url), ("--api-model", api_model)) if not value]
    if missing:
        raise InputError(f"--backend {OPENAI} needs {' and '.join(missing)}.",
                         "E.g. `--backend openai --base-url http://127.0.0.1:8000/v1 --api-model Qwen/Qwen-AgentWorld-35B-A3B`.")
    return RemoteOptions(base_url=list(base_url or ()), api_model=api_model or "", api_key_env=api_key_env,
                         timeout_s=timeout, retries=retries)


def _with_options(command: Callable[..., Any], options: tuple[tuple[str, type, Any], ...], target: str,
                  build: Callable[[dict[str, Any], dict[str, Any]], Any]) -> Callable[..., Any]:
    """`command` with `options` added to its signature (for Typer); their values become one
    argument, `target`, made by `build(values, the command's other arguments)`."""
    signature = inspect.signature(command)
    kept = [p for p in signature.parameters.values() if p.name != target]
    added = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=kind)
             for name, kind, option in options]
    kept = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD else p for p in kept]

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        values = {name: kwargs.pop(name) for name, _, _ in options}
        kwargs[target] = build(values, kwargs)
        return command(*args, **kwargs)

    wrapper.__signature__ = signature.replace(parameters=[*kept, *added])  # type: ignore[attr-defined]
    return wrapper


def remote_model_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add the remote-model options to `command`, which takes `remote: RemoteOptions | None`
    (and reads `model`, when it has one, to refuse --model with a server)."""
    return _with_options(command, _OPTIONS, "remote",
                         lambda values, others: remote_options(model=others.get("model"), **values))


def model_or_server(model: str | None, remote: RemoteOptions | None, command: str) -> None:
    """A command that must load something: refuse one with neither a model nor a server."""
    if model is None and remote is None:
        raise InputError(f"awl {command} needs a model.",
                         "Add `--model PATH/TO/model.gguf`, or `--backend openai --base-url URL --api-model NAME` for a server.")


def check_concurrency(concurrency: int | None, remote: RemoteOptions | None) -> None:
    """`--concurrency`: at least 1, and more than 1 only on a server (a local model runs one row at a time)."""
    if concurrency is None:
        return
    if concurrency < 1:
        raise InputError(f"--concurrency {concurrency} must be at least 1.", "E.g. `--concurrency 4`.")
    if concurrency > 1 and remote is None:
        raise InputError("--concurrency runs several rows at once on a server; a model in this process runs one at a time.",
                         "Drop --concurrency, or serve the model and use `--backend openai --base-url URL --api-model NAME`.")


_OFFLOAD_OPTIONS = (
    ("cpu_moe", bool, typer.Option(False, "--cpu-moe", help="Keep every routed expert of a mixture-of-experts model in RAM; attention, the shared expert and the caches go to the GPU (llama.cpp's --cpu-moe). `--gpu-layers auto` does this by itself when the model does not fit.")),
    ("n_cpu_moe", int, typer.Option(None, "--n-cpu-moe", metavar="N", help="Keep the routed experts of the first N layers in RAM (llama.cpp's --n-cpu-moe).", show_default=False)),
    ("flash_attn", str, typer.Option("auto", "--flash-attn", help=f"Flash attention: {', '.join(FLASH_ATTN_MODES)} (auto: on where this llama.cpp build supports it; it shrinks the compute buffer).")),
    ("kv_type", str, typer.Option("f16", "--kv-type", help=f"The KV cache's type: {', '.join(KV_TYPE_BYTES)} (q8_0 halves the cache; it needs flash attention). On Qwen-AgentWorld (qwen35moe) a quantized KV cache risks quality and speed: others saw INT4 KV corrupt recall on vLLM, and q8_0 run up to 4.2x slower at 129K tokens on one llama.cpp backend; f16 is the safe choice (docs/remote.md).")),
    ("speculate", str, typer.Option("auto", "--speculate", help=f"Self-speculation: {', '.join(SPECULATE_MODES)} (on: draft the next tokens from text the context already holds; mtp: from the model's multi-token-prediction layer; drafts are verified in one batch, so the tokens are the same either way, up to batch arithmetic on hybrid models; auto: on for attention-only models, off for hybrid ones, pausing after a run of missed drafts; see docs/speculation.md).")),
    ("prefetch", bool, typer.Option(True, "--prefetch/--no-prefetch", help="Between turns, evaluate the next turn's prompt up to its action while you read and type (any command stops it at once; the answers are the same either way).")),
)


def offload_model_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add --cpu-moe, --n-cpu-moe, --flash-attn, --kv-type, --speculate and --no-prefetch to `command`, which takes
    `offload: OffloadOptions` (bad values are one line before anything loads)."""
    return _with_options(command, _OFFLOAD_OPTIONS, "offload", lambda values, others: OffloadOptions.from_flags(**values))
