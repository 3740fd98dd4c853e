"""`awl models info NAME|PATH [--plan]`: what a GGUF holds, what it needs, and what fits here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from agentworld_local.cli.consoles import facts_console
from agentworld_local.cli.model_options import offload_model_options
from agentworld_local.cli.models import models_app
from agentworld_local.models.gguf_file import check_gguf_path
from agentworld_local.models.offload_options import OffloadOptions
from agentworld_local.models.units import format_bytes, format_size
from agentworld_local.models.registry import ModelChoice, load_registry
from agentworld_local.models.resolve import looks_like_path

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

# models.inspect (gguf, numpy) and models.plan (psutil) load when `info` runs, not for `awl --help`.

SCHEMA = "agentworld-local/model-info"
VERSION = 1


def _locate(spec: str) -> tuple[Path | None, ModelChoice | None]:
    if looks_like_path(spec):
        return check_gguf_path(spec), None
    from agentworld_local.models.hub import cached_path  # huggingface_hub only for registry names

    choice = load_registry().find(spec)
    return cached_path(choice), choice


def _registry_facts(choice: ModelChoice) -> dict[str, Any]:
    return {
        "spec": choice.spec, "name": choice.name, "quant": choice.quant, "repo": choice.repo,
        "filename": choice.filename, "size": choice.size, "approx_size": choice.approx_size,
        "sha256": choice.sha256, "context_length": choice.context_length, "sampling": choice.sampling,
        "license": choice.license, "notes": choice.notes, "verified": choice.verified,
        "world_model": choice.world_model, "unverified": list(choice.unverified),
        "local_file": str(choice.local_file) if choice.local_file else None,
    }


def _run_command(target: Any, plan: Any, offload: OffloadOptions) -> str:
    """The `awl run` line that loads as planned (the options that differ from the defaults)."""
    words = [f"awl run --model {target} --gpu-layers {plan.gpu_layers}"]
    if plan.experts_label:
        words.append(plan.experts_label)
    if offload.flash_attn != "auto":
        words.append(f"--flash-attn {offload.flash_attn}")
    if offload.kv_type != "f16":
        words.append(f"--kv-type {offload.kv_type}")
    return " ".join(words) + f" --ctx {plan.n_ctx}"


def collect(spec: str, *, plan: bool, ctx: int | None, offload: OffloadOptions | None = None) -> dict[str, Any]:
    """Everything `awl models info` shows, as plain data (the `--json` output); `ctx` None: the
    context a load without --ctx would get (engine.loading.default_ctx)."""
    path, choice = _locate(spec)
    facts: dict[str, Any] = {
        "schema": SCHEMA, "version": VERSION, "model": spec,
        "registry": _registry_facts(choice) if choice else None,
        "downloaded": path is not None, "path": str(path) if path else None,
        "gguf": None, "llama_cpp": None, "memory": None, "plan": None,
    }
    if choice and path is None:
        facts["next_step"] = f"awl models pull {choice.spec}"
        if plan:
            facts["plan_before_download"] = _plan_before_download(choice)
        return facts
    assert path is not None
    from agentworld_local.models.inspect import inspect_gguf
    from agentworld_local.models.memory import estimate_memory
    from agentworld_local.models.plan import plan_offload

    summary = inspect_gguf(path, name=choice.spec if choice else None)
    facts["gguf"] = summary.to_dict()
    from agentworld_local.engine import llama  # llama_cpp loads only once the file is known to be sound

    check = llama.vocab_check(path)
    facts["llama_cpp"] = {"version": llama.llama_cpp_version(), "knows_architecture": check.known_architecture,
                          "error": check.error}
    if plan:
        offload = offload or OffloadOptions()
        offload.check_model(summary.expert_count, path.name)
        hardware = llama.machine_hardware()
        ctx_reason = "as asked"
        if ctx is None:
            from agentworld_local.engine.loading import default_ctx

            ctx, ctx_reason = default_ctx(summary, hardware, offload)
        estimate = estimate_memory(summary, ctx, kv_type=offload.kv_type, flash_attn=offload.flash_attn != "off")
        layout = plan_offload(estimate, hardware, n_ctx_wanted=ctx, cpu_moe=offload.cpu_moe)
        sized = estimate.with_ctx(layout.n_ctx)
        facts["memory"] = estimate.to_dict()
        facts["plan"] = layout.to_dict() | {
            "gpus": [gpu.name for gpu in hardware.gpus],
            "cpu_expert_bytes": sized.cpu_experts(list(sized.layers), layout.cpu_moe),
            "flash_attn": offload.flash_attn, "kv_type": offload.kv_type, "ctx_reason": ctx_reason,
        }
        facts["run_command"] = _run_command(choice.spec if choice else path, layout, offload)
    return facts


def _plan_before_download(choice: ModelChoice) -> dict[str, Any] | None:
    """--plan for a registry model not downloaded yet: from the registry's file size and this
    machine's memory (models.plan.plan_before_download); None when the registry gives no size."""
    size = choice.expected_size
    if size is None:
        return None
    from agentworld_local.engine import llama  # the GPUs this build can use, as the real plan counts them
    from agentworld_local.models.plan import plan_before_download

    return plan_before_download(size, choice.size is not None, llama.machine_hardware()) | {
        "context_length": choice.context_length}


# -- rendering ---------------------------------------------------------------------------------


def _table() -> Table:
    from rich.table import Table

    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")  # paths and hub file names stay whole
    return table


def _count(n: int) -> str:
    for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if n >= size:
            return f"{n / size:.1f}{suffix}"
    return str(n)


def _weights_parts(memory: dict[str, Any]) -> str:
    """The weights' parts, which add up to them: "embeddings 1.0 MiB + output 1.0 MiB + 2 attention
    layers 0.5 MiB + ...", each kind of layer without its routed experts when there are some."""
    experts = bool(memory["expert_bytes"])
    words = []
    for part in memory["weights_parts"]:
        name, count, size = part["part"], part["count"], format_bytes(part["bytes"])
        if name == "output" and memory["tied_output_bytes"]:
            words.append(f"output norm {size} (the output head is the embeddings)")
        elif name == "experts":
            words.append(f"routed experts of {count} layers {size}")
        elif name in ("embeddings", "output", "other tensors"):
            words.append(f"{name} {size}")
        else:
            layers = "layer" if count == 1 else "layers"
            words.append(f"{count} {name} {layers}{' without experts' if experts else ''} {size}")
    return " + ".join(words)


def _render_registry(table: Table, registry: dict[str, Any]) -> None:
    table.add_row("registry", f"{registry['spec']}" + ("" if registry["verified"] else "  (file name/size not verified)"))
    world_model = {True: "yes: trained to predict environment observations",
                   False: "no: a general model; its observations are guesses (fine for a first try)"}
    table.add_row("world model", world_model.get(registry["world_model"], "not said in the registry"))
    if registry["local_file"]:  # registered with `awl models add`: the user's own copy
        table.add_row("local file", f"{registry['local_file']}  (added with `awl models add`)")
    if registry["repo"]:
        table.add_row("on the hub" if registry["local_file"] else "hub file", f"{registry['repo']}/{registry['filename']}")
    elif not registry["local_file"]:
        table.add_row("file", registry["filename"])
    if registry["unverified"]:
        table.add_row("not checked", ", ".join(registry["unverified"]))
    size = registry["size"] or registry["approx_size"]
    if size:
        table.add_row("download size", ("" if registry["size"] else "about ") + f"{size:,} bytes ({format_size(size)})")
    if registry["notes"]:
        table.add_row("notes", registry["notes"])


def _render_gguf(table: Table, facts: dict[str, Any]) -> None:
    gguf, llama_cpp = facts["gguf"], facts["llama_cpp"]
    header = gguf["file_size"] - gguf["tensor_bytes"]  # metadata and vocabulary, before the tensors' data
    table.add_row("file", f"{facts['path']}  ({gguf['file_size']:,} bytes, {format_bytes(gguf['file_size'])}: "
                          f"{format_bytes(gguf['tensor_bytes'])} of tensors, {format_bytes(header)} of header)")
    table.add_row("architecture", gguf["architecture"] + (f"  ({gguf['name']})" if gguf["name"] else ""))
    if llama_cpp["knows_architecture"] and not llama_cpp["error"]:
        support = f"yes, llama-cpp-python {llama_cpp['version']} loads it"
    elif llama_cpp["knows_architecture"]:
        support = f"knows the architecture, but refuses the file: {llama_cpp['error']}"
    else:
        support = (f"no: llama-cpp-python {llama_cpp['version']} does not know `{gguf['architecture']}`; "
                   "upgrade it (`pip install -U llama-cpp-python`)")
    table.add_row("llama.cpp", support)
    summary_line = f"{gguf['block_count']} blocks: {gguf['attention_layers']} attention"
    if gguf["recurrent_layers"]:
        summary_line += f", {gguf['recurrent_layers']} recurrent"
    if gguf["nextn_layers"]:
        summary_line += f", {gguf['nextn_layers']} MTP/nextn (skipped when loading)"
    if gguf["declared_block_count"] != gguf["block_count"]:
        missing = gguf["declared_nextn_layers"] - gguf["nextn_layers"]
        summary_line += (f"; the header declares {gguf['declared_block_count']}, but the file holds no tensors for "
                         f"{'its MTP layer' if missing == 1 else f'{missing} MTP layers'} (loaded as {gguf['block_count']})")
    table.add_row("layers", summary_line)
    if gguf["expert_count"]:
        shared = f" + {gguf['expert_shared_count']} shared" if gguf["expert_shared_count"] else ""
        table.add_row("experts", f"{gguf['expert_count']} ({gguf['expert_used_count']} routed per token{shared})")
    table.add_row("attention", f"{gguf['head_count']} heads, {gguf['kv_heads']} KV heads of dim {gguf['key_length']}")
    table.add_row("context", f"{gguf['context_length']:,} tokens (trained)" if gguf["context_length"] else "unknown")
    table.add_row("quantization", f"{gguf['quantization']}  ({gguf['bits_per_weight']} bits/weight, "
                                  f"{_count(gguf['n_params'])} parameters)")
    table.add_row("chat template", "embedded" if gguf["chat_template"] else "none (a plain ChatML fallback is used)")


def _render_plan(table: Table, facts: dict[str, Any]) -> None:
    memory, plan = facts["memory"], facts["plan"]
    n_ctx = memory["n_ctx"]
    table.add_row("", "")
    if plan.get("ctx_reason", "as asked") != "as asked":
        table.add_row("context (no --ctx)", f"{n_ctx:,} tokens: {plan['ctx_reason']}")
    table.add_row(f"memory at {n_ctx:,} tokens", "(estimate, before loading)")
    which = "the file's tensors but its MTP layer" if memory["skipped_mtp_bytes"] else "the file's tensors"
    table.add_row("  weights", f"{format_bytes(memory['weights_bytes'])}  ({which}: {_weights_parts(memory)})")
    if memory["skipped_mtp_bytes"]:
        table.add_row("  not loaded", f"{format_bytes(memory['skipped_mtp_bytes'])}  (the file's MTP layer: "
                                      "`--speculate mtp` loads it)")
    if memory["tied_output_bytes"] and plan["gpu_layers"] and plan["gpus"]:
        table.add_row("  output head copy", f"{format_bytes(memory['tied_output_bytes'])}  (llama.cpp copies the "
                                            "embeddings for the output layer on the GPU; in the GPU memory below)")
    attention = sum(layer["kind"] == "attention" for layer in memory["layers"])
    table.add_row("  KV cache", f"{format_bytes(memory['kv_bytes'])}  ({attention} attention layers, "
                                f"{format_bytes(memory['kv_bytes_per_token'])} per token, {memory['kv_type']})")
    recurrent = sum(layer["kind"] == "recurrent" for layer in memory["layers"])
    if recurrent:
        table.add_row("  recurrent state", f"{format_bytes(memory['recurrent_bytes'])}  ({recurrent} layers, fixed size)")
    flash = "flash attention" if memory["flash_attn"] else "no flash attention: the scores grow with the context"
    table.add_row("  compute buffers", f"{format_bytes(memory['compute_bytes'])}  ({flash})")
    if memory["checkpoint_bytes"]:
        table.add_row("  turn checkpoints", f"up to {format_bytes(memory['checkpoint_bytes'])}  (one recurrent state per turn, RAM)")
    table.add_row("  prompt states", f"up to {format_bytes(memory['prompt_state_bytes'])}  (system prompts held for the next sessions, RAM)")
    table.add_row("  parked states", f"{format_bytes(memory['parked_state_bytes'])}  (sessions waiting for a place: one context's "
                                     "state counted; more get the RAM left, up to 2 GiB, the rest go to disk)")
    if memory["expert_bytes"]:
        table.add_row("  routed experts", f"{format_bytes(memory['expert_bytes'])} of the weights")
    table.add_row("  total", format_bytes(memory["total_bytes"]))
    table.add_row("", "")
    devices = ", ".join(plan["gpus"]) or "no GPU"
    table.add_row("offload plan", f"{plan['gpu_layers']}/{plan['max_layers']} layers on the GPU ({devices}), "
                                  f"{plan['n_ctx']:,}-token context")
    if plan["cpu_moe"]:
        which = "every layer" if plan["cpu_moe"] < 0 else f"the first {plan['cpu_moe']} layers"
        table.add_row("  experts in RAM", f"{format_bytes(plan['cpu_expert_bytes'])}  (the routed experts of {which})")
    if plan["gpus"]:
        table.add_row("  GPU memory", f"{format_bytes(plan['gpu_bytes'])} of {format_bytes(plan['gpu_budget'])} usable")
    table.add_row("  RAM", f"{format_bytes(plan['cpu_bytes'])} of {format_bytes(plan['ram_budget'])} usable")
    table.add_row("  fits", ("yes" if plan["fits"] else "no") + f"  ({format_bytes(plan['margin'])} margin kept free)")
    table.add_row("  why", plan["reason"])
    table.add_row("  run with", facts["run_command"])


def _render_plan_before_download(table: Table, plan: dict[str, Any] | None) -> None:
    table.add_row("", "")
    if plan is None:
        table.add_row("plan", "not before the download: the registry gives no file size")
        return
    table.add_row("plan (estimate)", "from the registry's file size; the KV cache and buffers need the file's "
                                     "header, so run --plan again once it is downloaded")
    weights = ("" if plan["weights_exact"] else "about ") + format_bytes(plan["weights_bytes"])
    table.add_row("  weights", f"{weights}  (the file's size)")
    if plan["gpus"]:
        table.add_row("  GPU memory", f"{format_bytes(plan['gpu_budget'])} usable ({', '.join(plan['gpus'])})")
    table.add_row("  RAM", f"{format_bytes(plan['ram_budget'])} usable")
    table.add_row("  fits", ("probably" if plan["weights_fit"] else "no") + f": {plan['reason']}")
    if plan.get("context_length"):
        table.add_row("  context", f"{plan['context_length']:,} tokens (trained, from the registry)")


def render(facts: dict[str, Any], console: Console) -> None:
    table = _table()
    if facts["registry"]:
        _render_registry(table, facts["registry"])
    if not facts["downloaded"]:
        registry = facts["registry"]
        size = registry["size"] or registry["approx_size"]
        size_text = f" ({'' if registry['size'] else 'about '}{format_size(size)})" if size else ""
        table.add_row("downloaded", f"no. Run `{facts['next_step']}`{size_text}, or "
                                    f"`awl models add {registry['spec']} PATH` for a copy you have.")
        if "plan_before_download" in facts:
            _render_plan_before_download(table, facts["plan_before_download"])
    else:
        _render_gguf(table, facts)
        if facts["plan"]:
            _render_plan(table, facts)
    console.print(table)


INFO_HELP = (
    "Show what a GGUF holds (read from its header, no weights loaded), and with --plan what fits here.\n\n"
    "Architecture, layers (MTP/nextn included), experts, trained context, quantization, file size, chat "
    "template, and whether this llama.cpp build knows the architecture. --plan adds the memory estimate "
    "(weights + KV cache + recurrent state + compute buffers) and the GPU layers and context that fit this "
    "machine's free memory with a margin: the plan `awl run --gpu-layers auto` uses.\n\n"
    "Example: `awl models info qwen-agentworld-35b-a3b --plan --ctx 32768`, or "
    "`awl models info ~/models/model.gguf --json`."
)


@models_app.command("info", help=INFO_HELP)
@offload_model_options
def info(
    model: str = typer.Argument(..., help="A registry name (`NAME` or `NAME:QUANT`) or a path to a .gguf file.",
                                metavar="NAME|PATH"),
    plan: bool = typer.Option(False, "--plan", help="Estimate memory for --ctx and plan GPU layers on this machine."),
    ctx: int = typer.Option(None, "--ctx", min=1, show_default=False,
                            help="Context size (tokens) for the estimate and the plan (default: what a load without "
                                 "--ctx gets on this machine)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    offload: OffloadOptions | None = None,
) -> None:
    facts = collect(model, plan=plan, ctx=ctx, offload=offload)
    if as_json:
        typer.echo(json.dumps(facts, indent=2))
        return
    render(facts, facts_console())

