"""How to load: GPU layers and context size, said before the load starts (and after an out-of-memory)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agentworld_local.engine.llama.devices import machine_hardware, supports_gpu_offload
from agentworld_local.engine.llama.header import vocab_check
from agentworld_local.engine.llama.loading import explain_load_failure
from agentworld_local.engine.llama.logs import LOGS
from agentworld_local.errors import AwlError, ModelError
from agentworld_local.models.inspect import inspect_gguf
from agentworld_local.models.memory import MemoryEstimate, estimate_memory
from agentworld_local.models.offload_options import OffloadOptions
from agentworld_local.models.plan import OffloadPlan, plan_offload, smaller_plan
from agentworld_local.models.units import format_bytes

Notice = Callable[[str], None]


def estimate_for(path: str | Path, n_ctx: int, options: OffloadOptions) -> MemoryEstimate:
    """The memory estimate for a load with these options (flash attention `auto` counts as on:
    the CPU, CUDA and Metal backends all run it for the architectures we load)."""
    return estimate_memory(inspect_gguf(path), n_ctx, kv_type=options.kv_type, flash_attn=options.flash_attn != "off")


def plan_for(path: str | Path, n_ctx: int, options: OffloadOptions = OffloadOptions()) -> OffloadPlan:
    """The offload plan for this model, this build and this machine's free memory now; experts
    are planned only when the user did not place them (--cpu-moe / --n-cpu-moe)."""
    estimate = estimate_for(path, n_ctx, options)
    return plan_offload(estimate, machine_hardware(), n_ctx_wanted=n_ctx, cpu_moe=options.cpu_moe)


def check_options(path: Path, options: OffloadOptions) -> None:
    """Refuse options this model cannot take (experts in RAM for a model without), before the load."""
    if not options.cpu_moe:
        return
    try:
        summary = inspect_gguf(path)
    except ModelError:
        raise
    except Exception:  # noqa: BLE001 - the load says what is wrong with the file
        return
    options.check_model(summary.expert_count, path.name)


def resolve_gpu_layers(value: str | int) -> int:
    """A layer count for llama.cpp: N, or `all` (-1). `auto` is resolved with an offload plan
    before it gets here (see `choose_layers`)."""
    if isinstance(value, int):
        return value
    text = value.strip().lower()
    if text == "all":
        return -1
    if text.lstrip("-").isdigit():
        return int(text)
    raise AwlError(f"Invalid GPU layer count `{value}`.", "Use `auto`, `all`, or a number such as `--gpu-layers 20`.")


def layout(gpu_layers: int, n_ctx: int) -> str:
    if gpu_layers == 0:
        return f"a {n_ctx:,}-token context on the CPU"
    return f"{'all' if gpu_layers < 0 else gpu_layers} GPU layers and a {n_ctx:,}-token context"


def choose_layers(
    path: Path, gpu_layers: str | int, n_ctx: int, notice: Notice, options: OffloadOptions = OffloadOptions()
) -> tuple[int, int, OffloadPlan | None]:
    """(GPU layers, context size, the plan if one was made). `auto`: the offload plan when this
    build has a GPU backend (0 layers on a CPU-only build); the plan's experts in RAM are in
    `plan.cpu_moe`."""
    check_options(path, options)
    if not (isinstance(gpu_layers, str) and gpu_layers.strip().lower() == "auto"):
        layers = resolve_gpu_layers(gpu_layers)
        announce_estimate(path, layers, n_ctx, notice, options)
        return layers, n_ctx, None
    if not supports_gpu_offload():
        announce_estimate(path, 0, n_ctx, notice, options)
        return 0, n_ctx, None
    plan = plan_for(path, n_ctx, options)
    experts = f" ({plan.experts_label})" if plan.experts_label else ""
    notice(
        f"offload plan: {plan.layers_label} layers on the GPU{experts}, a {plan.n_ctx:,}-token context, "
        f"{format_bytes(plan.gpu_bytes)} GPU + {format_bytes(plan.cpu_bytes)} RAM. {plan.reason}"
    )
    return plan.gpu_layers, plan.n_ctx, plan


def announce_estimate(
    path: Path, gpu_layers: int, n_ctx: int, notice: Notice, options: OffloadOptions = OffloadOptions()
) -> None:
    """Say what the load will take before it starts (a 20 GB load should not surprise)."""
    if not vocab_check(path).known_architecture:
        return  # the load itself says so, in one line
    try:
        estimate = estimate_for(path, n_ctx, options)
    except ModelError:
        raise  # a truncated or damaged file: its own message says to re-download
    except Exception:  # noqa: BLE001 - an estimate we cannot make must not block a load llama.cpp may manage
        return
    ram = machine_hardware().ram_available if gpu_layers == 0 else None
    notice(
        f"memory estimate for {layout(gpu_layers, n_ctx)}: {format_bytes(estimate.total_bytes)} "
        f"({format_bytes(estimate.weights_bytes)} weights, {format_bytes(estimate.kv_bytes)} KV cache, "
        f"{format_bytes(estimate.recurrent_bytes)} recurrent state, {format_bytes(estimate.compute_bytes)} compute, "
        f"up to {format_bytes(estimate.held_bytes)} turn checkpoints, held prompt states and parked session states)"
        + (f"; {format_bytes(ram)} RAM available" if ram is not None else "")
        + (". It may not fit: try a smaller `--ctx` or quantization." if ram is not None and estimate.total_bytes > ram else "")
    )


def smaller_after_oom(
    path: Path, failed_layers: int, failed_ctx: int, notice: Notice, options: OffloadOptions = OffloadOptions()
) -> OffloadPlan:
    """The one retry after llama.cpp ran out of memory, announced through `notice`."""
    estimate = estimate_for(path, failed_ctx, options)
    retry = smaller_plan(estimate, machine_hardware(), failed_layers=failed_layers, failed_ctx=failed_ctx)
    if retry is None:
        raise explain_load_failure(path, LOGS.text())
    notice(
        f"not enough memory for {layout(failed_layers, failed_ctx)}; retrying once with "
        f"{layout(retry.gpu_layers, retry.n_ctx)} (about {format_bytes(retry.gpu_bytes + retry.cpu_bytes)})."
    )
    return retry
