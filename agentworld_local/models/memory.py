"""How much memory a GGUF needs for a context size, before anything is loaded.

Four parts, following what llama.cpp allocates (llama-model.cpp, llama-kv-cache.cpp,
llama-memory-recurrent.cpp in the vendored sources):
- weights: the tensors it loads, exactly the file's (an MTP/nextn layer is skipped unless
  asked for; `weights_parts` splits them so that the parts add up); a model whose output head
  is its embedding (tied) gets a GPU copy of it when the output layer is offloaded, counted
  in `gpu_bytes` only (on the CPU both are the same mapped bytes);
- KV cache: only attention layers keep one (K and V of `n_ctx` cells each, f16 unless
  `--kv-type` says otherwise; in hybrid models the recurrent layers have none);
- recurrent state: per recurrent layer, f32 conv + SSM state for one sequence, fixed size;
- compute buffers: the graph's scratch for one `n_ubatch` batch. Without flash attention
  the attention scores dominate: n_ubatch x n_ctx x (heads + mask) floats; with it only
  the f16 mask grows with the context. Plus the logits of the batch.
Plus what awl holds in host memory beside llama.cpp: turn checkpoints (a copy of the
recurrent state per turn, within CHECKPOINT_BUDGET), the system-prompt states kept for the
process's next sessions (within PROMPT_STATE_BUDGET) and the parked states of sessions waiting
for a place (within PARKED_STATE_BUDGET; beyond it they go to disk).
`gpu_bytes(k, cpu_moe=m)` / `cpu_bytes(k, cpu_moe=m)` split it the way llama.cpp places
`n_gpu_layers = k` with the routed experts of the first m layers kept in RAM (--n-cpu-moe).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from agentworld_local.models.inspect import GgufSummary
from agentworld_local.models.offload_options import ALL_LAYERS, KV_TYPE_BYTES

STATE_BYTES = 4  # recurrent states are f32
FLOAT_BYTES = 4
DEFAULT_UBATCH = 512  # engine/llama/ loads with n_batch = n_ubatch = 512
#: Host memory for turn checkpoints, all sequences together (engine/llama/backend.py keeps
#: within it); an attention-only model's checkpoints are positions only.
CHECKPOINT_BUDGET = 2 * 1024**3
#: Turns are planned at this many tokens or more: checkpoints are one per turn in steady state.
PLANNED_TURN_TOKENS = 32
#: Host memory for system-prompt states held for the next sessions (engine/llama/prompt_states.py).
PROMPT_STATE_BUDGET = 1024**3
#: Host memory for the states of sessions whose place another took, waiting to get one back
#: (engine/llama/parking.py; beyond it they go to disk, least recently parked first).
PARKED_STATE_BUDGET = 2 * 1024**3


@dataclass(frozen=True)
class LayerCost:
    index: int
    kind: str
    weight_bytes: int  # 0 for an MTP layer llama.cpp skips
    kv_bytes_per_token: int
    state_bytes: int
    expert_bytes: int = 0  # the routed experts' share of weight_bytes

    def total(self, n_ctx: int) -> int:
        return self.weight_bytes + self.kv_bytes_per_token * n_ctx + self.state_bytes


@dataclass(frozen=True)
class MemoryEstimate:
    n_ctx: int
    n_ubatch: int
    layers: tuple[LayerCost, ...]  # every block llama.cpp counts, MTP included
    input_bytes: int  # token embedding, always on the CPU
    output_bytes: int  # output norm + head: the last layer llama.cpp offloads
    skipped_bytes: int  # MTP weights in the file that are not loaded
    compute_fixed: int
    compute_per_token: int  # compute bytes per context token
    context_length: int | None
    kv_type: str = "f16"
    flash_attn: bool = False
    tied_output_bytes: int = 0  # the embedding's copy an offloaded output layer gets when the head is tied
    other_bytes: int = 0  # tensors outside blocks, embedding and output (placed with the output layer)

    @property
    def expert_bytes(self) -> int:
        return sum(layer.expert_bytes for layer in self.layers)

    @property
    def weights_bytes(self) -> int:
        """The file's tensors that llama.cpp loads (all of them but a skipped MTP layer)."""
        return self.input_bytes + self.output_bytes + self.other_bytes + sum(layer.weight_bytes for layer in self.layers)

    @property
    def weights_parts(self) -> list[dict[str, Any]]:
        """`weights_bytes` split into parts that add up to it: the embedding, the output, each
        kind of layer (their routed experts apart), the routed experts, anything else."""
        parts = [{"part": "embeddings", "count": 1, "bytes": self.input_bytes},
                 {"part": "output", "count": 1, "bytes": self.output_bytes}]
        kinds: dict[str, list[LayerCost]] = {}
        for layer in self.layers:
            if layer.kind != "mtp":
                kinds.setdefault(layer.kind, []).append(layer)
        for kind, layers in kinds.items():  # "attention", "recurrent", "other": their routed experts apart
            parts.append({"part": kind, "count": len(layers),
                          "bytes": sum(layer.weight_bytes - layer.expert_bytes for layer in layers)})
        if self.expert_bytes:
            parts.append({"part": "experts", "count": sum(layer.expert_bytes > 0 for layer in self.layers),
                          "bytes": self.expert_bytes})
        if self.other_bytes:
            parts.append({"part": "other tensors", "count": 1, "bytes": self.other_bytes})
        return parts

    @property
    def kv_bytes(self) -> int:
        return self.n_ctx * sum(layer.kv_bytes_per_token for layer in self.layers)

    @property
    def kv_bytes_per_token(self) -> int:
        return sum(layer.kv_bytes_per_token for layer in self.layers)

    @property
    def recurrent_bytes(self) -> int:
        return sum(layer.state_bytes for layer in self.layers)

    @property
    def compute_bytes(self) -> int:
        return self.compute_fixed + self.compute_per_token * self.n_ctx

    @property
    def checkpoint_bytes(self) -> int:
        """Turn checkpoints at most: one recurrent state per turn, up to the budget."""
        return min(CHECKPOINT_BUDGET, self.recurrent_bytes * (self.n_ctx // PLANNED_TURN_TOKENS))

    @property
    def prompt_state_bytes(self) -> int:
        """System-prompt states held at most: counted as one full context's state, up to the budget."""
        return min(PROMPT_STATE_BUDGET, self.kv_bytes + self.recurrent_bytes)

    @property
    def parked_state_bytes(self) -> int:
        """Parked session states held in RAM: counted as one full context's state (a probe's or a
        fork's, or a session beyond the places; the turn checkpoints it carries are within theirs),
        up to the budget. More sessions waiting for a place get what the plan leaves too, up to the
        budget (engine/llama/parking.parked_budget); the rest go to disk."""
        return min(PARKED_STATE_BUDGET, self.kv_bytes + self.recurrent_bytes)

    @property
    def held_bytes(self) -> int:
        """Host memory awl keeps beside llama.cpp's buffers (checkpoints, prompt states, parked states)."""
        return self.checkpoint_bytes + self.prompt_state_bytes + self.parked_state_bytes

    @property
    def total_bytes(self) -> int:
        return self.weights_bytes + self.kv_bytes + self.recurrent_bytes + self.compute_bytes + self.held_bytes

    @property
    def max_gpu_layers(self) -> int:
        """llama.cpp's `n_gpu_layers` that offloads everything: every block plus the output layer."""
        return len(self.layers) + 1

    def with_ctx(self, n_ctx: int) -> "MemoryEstimate":
        return replace(self, n_ctx=n_ctx)

    def _on_gpu(self, gpu_layers: int) -> list[LayerCost]:
        # llama.cpp: layers i >= n_layer_all + 1 - n_gpu_layers go to the GPU; index n_layer_all is the output.
        k = self.max_gpu_layers if gpu_layers < 0 else min(gpu_layers, self.max_gpu_layers)
        start = len(self.layers) + 1 - k
        return [layer for layer in self.layers if layer.index >= start]

    def cpu_experts(self, layers: list[LayerCost], cpu_moe: int) -> int:
        """Bytes of the routed experts among `layers` that `cpu_moe` keeps in RAM."""
        return sum(layer.expert_bytes for layer in layers if cpu_moe == ALL_LAYERS or layer.index < cpu_moe)

    def gpu_bytes(self, gpu_layers: int, cpu_moe: int = 0) -> int:
        """GPU memory for `n_gpu_layers = gpu_layers` (-1 = all): their weights (less the experts
        `cpu_moe` keeps in RAM), caches, and compute."""
        if gpu_layers == 0:
            return 0
        layers = self._on_gpu(gpu_layers)
        weights = sum(layer.total(self.n_ctx) for layer in layers) - self.cpu_experts(layers, cpu_moe)
        return self.output_bytes + self.tied_output_bytes + self.other_bytes + weights + self.compute_bytes

    def cpu_bytes(self, gpu_layers: int, cpu_moe: int = 0) -> int:
        """Host memory for the rest; a partial offload (or experts in RAM) keeps a host compute buffer too."""
        on_gpu = self._on_gpu(gpu_layers) if gpu_layers else []
        indexes = {layer.index for layer in on_gpu}
        rest = sum(layer.total(self.n_ctx) for layer in self.layers if layer.index not in indexes)
        experts = self.cpu_experts(on_gpu, cpu_moe)
        everything_offloaded = (gpu_layers < 0 or gpu_layers >= self.max_gpu_layers) and not experts
        output = 0 if gpu_layers else self.output_bytes + self.other_bytes
        compute = 0 if everything_offloaded else self.compute_bytes
        return self.input_bytes + output + rest + experts + compute + self.held_bytes

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_ctx": self.n_ctx,
            "kv_type": self.kv_type,
            "flash_attn": self.flash_attn,
            "expert_bytes": self.expert_bytes,
            "weights_bytes": self.weights_bytes,
            "weights_parts": self.weights_parts,
            "tied_output_bytes": self.tied_output_bytes,
            "kv_bytes": self.kv_bytes,
            "kv_bytes_per_token": self.kv_bytes_per_token,
            "recurrent_bytes": self.recurrent_bytes,
            "compute_bytes": self.compute_bytes,
            "checkpoint_bytes": self.checkpoint_bytes,
            "prompt_state_bytes": self.prompt_state_bytes,
            "parked_state_bytes": self.parked_state_bytes,
            "total_bytes": self.total_bytes,
            "skipped_mtp_bytes": self.skipped_bytes,
            "layers": [
                {"index": layer.index, "kind": layer.kind, "weight_bytes": layer.weight_bytes,
                 "expert_bytes": layer.expert_bytes,
                 "kv_bytes": layer.kv_bytes_per_token * self.n_ctx, "state_bytes": layer.state_bytes}
                for layer in self.layers
            ],
        }


def recurrent_state_bytes(summary: GgufSummary) -> int:
    """One sequence's state for one recurrent layer (llama_hparams::n_embd_r + n_embd_s, f32)."""
    shape = summary.recurrent
    if shape.wkv_head_size:  # RWKV: token shift + wkv state
        rows = shape.token_shift_count * summary.embedding_length + summary.embedding_length * shape.wkv_head_size
        return rows * STATE_BYTES
    conv = max(shape.conv_kernel - 1, 0) * (shape.inner_size + 2 * shape.group_count * shape.state_size)
    ssm = shape.state_size * shape.inner_size
    return (conv + ssm) * STATE_BYTES


def estimate_memory(summary: GgufSummary, n_ctx: int, *, n_ubatch: int = DEFAULT_UBATCH, kv_type: str = "f16",
                    flash_attn: bool = False) -> MemoryEstimate:
    """Weights + KV cache for `n_ctx` + recurrent state + compute buffers, per layer where it applies."""
    kv_value_bytes = KV_TYPE_BYTES[kv_type]
    state = recurrent_state_bytes(summary)
    costs = []
    for layer in summary.layers:
        kv = 0
        if layer.kind == "attention":
            kv = int(layer.kv_heads * (summary.key_length + summary.value_length) * kv_value_bytes)
        costs.append(
            LayerCost(
                index=layer.index,
                kind=layer.kind,
                weight_bytes=0 if layer.kind == "mtp" else layer.weight_bytes,
                kv_bytes_per_token=kv,
                state_bytes=state if layer.kind == "recurrent" else 0,
                expert_bytes=0 if layer.kind == "mtp" else layer.expert_bytes,
            )
        )
    skipped = sum(layer.weight_bytes for layer in summary.layers if layer.kind == "mtp")
    batch = min(n_ubatch, max(n_ctx, 1))
    has_attention = any(layer.kind == "attention" for layer in summary.layers)
    # Without flash attention: scores for every head plus the shared mask (f32), for a batch
    # against the whole cache; with it the scores are never materialised, only the f16 mask.
    scores = 2 if flash_attn else (summary.head_count + 1) * FLOAT_BYTES
    per_token = batch * scores if has_attention else 0
    # The batch's logits, and activations a few embedding-widths wide.
    fixed = batch * summary.vocab_size * FLOAT_BYTES + batch * summary.embedding_length * FLOAT_BYTES * 16
    return MemoryEstimate(
        n_ctx=n_ctx,
        n_ubatch=batch,
        layers=tuple(costs),
        input_bytes=summary.input_bytes,
        output_bytes=summary.output_bytes,
        tied_output_bytes=summary.input_bytes if summary.tied_output else 0,
        other_bytes=summary.other_bytes,
        skipped_bytes=skipped,
        compute_fixed=fixed,
        compute_per_token=per_token,
        context_length=summary.context_length,
        kv_type=kv_type,
        flash_attn=flash_attn,
    )

