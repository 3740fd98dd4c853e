"""Pick GPU layers and a context size that fit this machine, with a margin.

Pure functions of a `MemoryEstimate` and `Hardware` facts, so the rules are tested with
synthetic machines (no GPU here) and real numbers. The policy:
- the context the user asked for is kept unless weights + caches cannot fit in GPU + RAM
  at all; then it is halved until they do (never below MIN_CTX), and it never exceeds
  the model's trained context;
- as many layers as fit go to the GPU, counted the way llama.cpp counts `n_gpu_layers`
  (the output layer first, then blocks from the last one down);
- a mixture-of-experts model that does not fit whole keeps its routed experts in RAM
  before it gives up a layer: every layer on the GPU, the experts of the first layers on
  the CPU (llama.cpp's --n-cpu-moe), as few as the GPU budget allows. Attention, the shared
  expert and the caches stay on the GPU; the experts are most of the bytes but few of the
  FLOPs per token, so this decodes much faster than a layer split of the same size;
- each memory pool keeps a margin free: other programs, driver/context overhead, and
  the estimate's own error.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from agentworld_local.defaults import MIN_CTX
from agentworld_local.models.hardware import Hardware
from agentworld_local.models.memory import MemoryEstimate
from agentworld_local.models.offload_options import ALL_LAYERS
from agentworld_local.models.units import format_bytes

_CTX_STEP = 256
_MIN_MARGIN = 512 * 1024 * 1024
_MARGIN_FRACTION = 0.10


@dataclass(frozen=True)
class OffloadPlan:
    gpu_layers: int  # llama.cpp's n_gpu_layers; max_layers = everything
    n_ctx: int
    fits: bool
    reason: str
    margin: int  # bytes kept free in each pool
    max_layers: int = 0
    gpu_bytes: int = 0
    cpu_bytes: int = 0
    gpu_budget: int = 0
    ram_budget: int = 0
    cpu_moe: int = 0  # layers whose routed experts stay in RAM (ALL_LAYERS: all), as OffloadOptions.cpu_moe

    @property
    def layers_label(self) -> str:
        return f"{self.gpu_layers}/{self.max_layers}"

    @property
    def experts_label(self) -> str:
        """`--cpu-moe` / `--n-cpu-moe N` for this plan, or "" when every expert goes with its layer."""
        if self.cpu_moe == ALL_LAYERS:
            return "--cpu-moe"
        return f"--n-cpu-moe {self.cpu_moe}" if self.cpu_moe else ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def margin_for(pool: int, scale: float = 1.0) -> int:
    return int(max(_MIN_MARGIN, pool * _MARGIN_FRACTION) * scale)


def _most_layers(estimate: MemoryEstimate, gpu_budget: int, cpu_moe: int = 0) -> int:
    for layers in range(estimate.max_gpu_layers, 0, -1):
        if estimate.gpu_bytes(layers, cpu_moe) <= gpu_budget:
            return layers
    return 0


def _fewest_cpu_experts(estimate: MemoryEstimate, gpu_budget: int) -> int | None:
    """The smallest --n-cpu-moe with every layer on the GPU within `gpu_budget`, None if even
    all experts in RAM leave too much."""
    n_layers = sum(layer.kind != "mtp" for layer in estimate.layers)
    for cpu_moe in range(1, n_layers + 1):
        if estimate.gpu_bytes(-1, cpu_moe) <= gpu_budget:
            return cpu_moe
    return None


def _layout(estimate: MemoryEstimate, gpu_budget: int, expert_offload: bool, cpu_moe: int) -> tuple[int, int]:
    """(GPU layers, --n-cpu-moe) for this budget: everything, else experts in RAM, else fewer
    layers (with every expert in RAM for a MoE model); `cpu_moe` given (not 0): the user's,
    only the layers are planned."""
    if cpu_moe:
        return (_most_layers(estimate, gpu_budget, cpu_moe) if gpu_budget else 0), cpu_moe
    layers = _most_layers(estimate, gpu_budget) if gpu_budget else 0
    if layers < estimate.max_gpu_layers and gpu_budget and expert_offload and estimate.expert_bytes:
        cpu_moe = _fewest_cpu_experts(estimate, gpu_budget)
        if cpu_moe is not None:
            return estimate.max_gpu_layers, cpu_moe
        # Not even the rest fits whole: split the layers, every expert in RAM (more layers fit).
        split = _most_layers(estimate, gpu_budget, ALL_LAYERS)
        if split > layers:
            return split, ALL_LAYERS
    return layers, 0


def _fits(estimate: MemoryEstimate, layers: int, ram_budget: int, unified: bool, cpu_moe: int = 0) -> bool:
    cpu = estimate.cpu_bytes(layers, cpu_moe)
    return (cpu + estimate.gpu_bytes(layers, cpu_moe) if unified else cpu) <= ram_budget


def plan_offload(
    estimate: MemoryEstimate, hardware: Hardware, *, n_ctx_wanted: int, margin_scale: float = 1.0,
    expert_offload: bool = True, cpu_moe: int = 0,
) -> OffloadPlan:
    """GPU layers, experts in RAM and context size for this model on this machine (see the
    module's policy); `expert_offload=False` plans whole layers only; `cpu_moe` (the user's
    --cpu-moe / --n-cpu-moe) fixes the experts in RAM and plans the layers around them."""
    cap = estimate.context_length or n_ctx_wanted
    n_ctx = max(1, min(n_ctx_wanted, cap))
    notes = []
    if n_ctx < n_ctx_wanted:
        notes.append(f"The model was trained for {cap:,} tokens, so the context is capped there.")
    gpu_pool = hardware.gpu_free if hardware.gpus else 0
    margin = margin_for(max(gpu_pool, hardware.ram_available), margin_scale)
    ram_budget = max(hardware.ram_available - margin_for(hardware.ram_available, margin_scale), 0)
    gpu_budget = max(gpu_pool - margin_for(gpu_pool, margin_scale), 0) if gpu_pool else 0
    if hardware.unified:  # the GPU's memory is the system RAM: its part and the CPU's must fit there together
        gpu_budget = min(gpu_budget, ram_budget)
    start = n_ctx
    while True:
        sized = estimate.with_ctx(n_ctx)
        layers, experts = _layout(sized, gpu_budget, expert_offload, cpu_moe)
        fits = _fits(sized, layers, ram_budget, hardware.unified, experts)
        if fits or n_ctx <= MIN_CTX:
            break
        n_ctx = max(MIN_CTX, n_ctx // 2 // _CTX_STEP * _CTX_STEP)
    if n_ctx < start:
        notes.append(f"The context is reduced from {start:,} to {n_ctx:,} tokens to fit in memory.")
    gpu_bytes, cpu_bytes = sized.gpu_bytes(layers, experts), sized.cpu_bytes(layers, experts)
    total = sized.max_gpu_layers
    devices = ", ".join(gpu.name for gpu in hardware.gpus)
    if not hardware.gpus:
        notes.append("No GPU this llama.cpp build can use: everything runs on the CPU.")
    elif experts:
        in_ram = sized.cpu_experts(list(sized.layers), experts)
        which = "every layer" if experts == ALL_LAYERS else f"the first {experts} layers"
        why = "as asked" if cpu_moe else f"the whole model does not fit on {devices}"
        notes.append(f"{layers} of {total} layers on {devices}, with the routed experts of {which} "
                     f"({format_bytes(in_ram)}) kept in RAM, {why} ({format_bytes(gpu_bytes)} of "
                     f"{format_bytes(gpu_budget)} usable on the GPU).")
    elif layers == total:
        notes.append(f"All {total} layers fit on {devices} ({format_bytes(gpu_bytes)} of "
                     f"{format_bytes(gpu_budget)} usable).")
    elif layers:
        notes.append(f"{layers} of {total} layers fit on {devices} ({format_bytes(gpu_bytes)} of "
                     f"{format_bytes(gpu_budget)} usable); the rest run on the CPU. A smaller --ctx or "
                     "quantization would offload more.")
    else:
        notes.append(f"Not even one layer fits in the {format_bytes(gpu_budget)} usable on {devices}: "
                     "everything runs on the CPU.")
    if not fits:
        notes.append(f"It does not fit: {format_bytes(cpu_bytes)} of RAM needed, {format_bytes(ram_budget)} "
                     "usable; llama.cpp would page weights from disk (very slow). Use a smaller quantization.")
    return OffloadPlan(
        gpu_layers=layers,
        n_ctx=n_ctx,
        fits=fits,
        reason=" ".join(notes),
        margin=margin,
        max_layers=total,
        gpu_bytes=gpu_bytes,
        cpu_bytes=cpu_bytes,
        gpu_budget=gpu_budget,
        ram_budget=ram_budget,
        cpu_moe=experts,
    )


def smaller_plan(
    estimate: MemoryEstimate, hardware: Hardware, *, failed_layers: int, failed_ctx: int
) -> OffloadPlan | None:
    """The plan to retry with after a load ran out of memory: strictly smaller, or None.

    A fresh plan with twice the margin (the estimate was evidently short), never more
    layers or context than the attempt that failed; when that changes nothing, halve
    the GPU layers, or the context when nothing is on the GPU.
    """
    failed_layers = estimate.max_gpu_layers if failed_layers < 0 else min(failed_layers, estimate.max_gpu_layers)
    fresh = plan_offload(estimate, hardware, n_ctx_wanted=failed_ctx, margin_scale=2.0, expert_offload=False)
    layers, n_ctx = min(fresh.gpu_layers, failed_layers), min(fresh.n_ctx, failed_ctx)
    if (layers, n_ctx) == (failed_layers, failed_ctx):
        if failed_layers > 0:
            layers = failed_layers // 2
        elif failed_ctx > MIN_CTX:
            n_ctx = max(MIN_CTX, failed_ctx // 2 // _CTX_STEP * _CTX_STEP)
        else:
            return None
    sized = estimate.with_ctx(n_ctx)
    return OffloadPlan(
        gpu_layers=layers,
        n_ctx=n_ctx,
        fits=_fits(sized, layers, fresh.ram_budget, hardware.unified),
        reason=f"retrying with {layers} GPU layers and a {n_ctx:,}-token context",
        margin=fresh.margin,
        max_layers=estimate.max_gpu_layers,
        gpu_bytes=sized.gpu_bytes(layers),
        cpu_bytes=sized.cpu_bytes(layers),
        gpu_budget=fresh.gpu_budget,
        ram_budget=fresh.ram_budget,
    )


def default_context(
    estimate: MemoryEstimate, hardware: Hardware, *, ceiling: int, cpu_moe: int = 0, parallel: int = 1
) -> tuple[int, str]:
    """(context size, why) when the user gave no --ctx: the largest one the offload plan fits
    on this machine, halving from the lower of `ceiling` and the model's trained context, with
    the GPU layout the smallest context would get (a longer context never moves layers or
    experts off the GPU). The ceiling keeps a machine with room to spare from reserving (and
    masking, every batch) a cache of 262k tokens it will not use. `parallel`: sessions that
    each get this context in one llama.cpp context (their caches are planned together)."""
    trained = estimate.context_length
    top = max(MIN_CTX, min(ceiling, trained) if trained else ceiling)
    # The trained cap is per sequence: the plan of all sequences' caches together must not apply it.
    together = replace(estimate, context_length=None)

    def plan_offload_for(n_ctx: int) -> OffloadPlan:
        plan = plan_offload(together, hardware, n_ctx_wanted=n_ctx * parallel, cpu_moe=cpu_moe)
        return replace(plan, n_ctx=plan.n_ctx // parallel)

    smallest = plan_offload_for(MIN_CTX)
    if not smallest.fits:
        return MIN_CTX, "the smallest usable: even that may not fit in free memory (`awl models info MODEL --plan`)"
    n_ctx = top
    while n_ctx > MIN_CTX:
        plan = plan_offload_for(n_ctx)
        if plan.fits and plan.n_ctx == n_ctx and (plan.gpu_layers, plan.cpu_moe) == (smallest.gpu_layers, smallest.cpu_moe):
            break
        n_ctx = max(MIN_CTX, n_ctx // 2 // _CTX_STEP * _CTX_STEP)
    if n_ctx == top and trained and top == trained:
        return n_ctx, f"what the model was trained for, and it fits in {'GPU + ' if hardware.gpus else ''}memory"
    if n_ctx == top:
        return n_ctx, (f"the default's ceiling (the model was trained for {trained:,})" if trained
                       else "the default's ceiling")
    where = "this machine's free memory" + (" with the same layers on the GPU" if hardware.gpus else "")
    return n_ctx, f"the largest that fits {where} ({top:,} would not)"


def plan_before_download(weights_bytes: int, exact: bool, hardware: Hardware) -> dict[str, Any]:
    """What the registry alone tells before the download, all estimates: the weights take
    about the file's size; the KV cache, the recurrent state and the compute buffers depend
    on the layer shapes in the GGUF's header, read once it is downloaded."""
    gpu_pool = hardware.gpu_free if hardware.gpus else 0
    ram_budget = max(hardware.ram_available - margin_for(hardware.ram_available), 0)
    gpu_budget = max(gpu_pool - margin_for(gpu_pool), 0) if gpu_pool else 0
    if hardware.unified:
        gpu_budget = min(gpu_budget, ram_budget)
    together = ram_budget if hardware.unified else gpu_budget + ram_budget
    size = ("" if exact else "about ") + format_bytes(weights_bytes)
    if gpu_budget and weights_bytes <= gpu_budget:
        reason = f"The weights ({size}) fit on the GPU, leaving {format_bytes(gpu_budget - weights_bytes)} for the caches."
    elif weights_bytes <= together:
        where = "the GPU and RAM together" if gpu_budget else "RAM (no GPU this llama.cpp build can use)"
        reason = f"The weights ({size}) fit in {where}, leaving {format_bytes(together - weights_bytes)} for the caches."
    else:
        reason = (f"The weights alone ({size}) are more than the {format_bytes(together)} usable here: "
                  "pick a smaller quantization.")
    return {"estimate": True, "weights_bytes": weights_bytes, "weights_exact": exact,
            "gpus": [gpu.name for gpu in hardware.gpus], "gpu_budget": gpu_budget, "ram_budget": ram_budget,
            "weights_fit_gpu": bool(gpu_budget) and weights_bytes <= gpu_budget,
            "weights_fit": weights_bytes <= together, "reason": reason}
