"""How much memory a GGUF needs for a context size, before anything is loaded.

Four parts, following what llama.cpp allocates (llama-model.cpp, llama-kv-cache.cpp,
llama-memory-recurrent.cpp in the vendored sources):
- weights: the tensors it loads (an MTP/nextn layer is skipped unless asked for);
- KV cache: only attention layers keep one (f16 K and V, `n_ctx` cells each; in hybrid
  models the recurrent layers have none);
- recurrent state: per recurrent layer, f32 conv + SSM state for one sequence, fixed size;
- compute buffers: the graph's scratch for one `n_ubatch` batch. Without flash attention
  (our default) the attention scores dominate: n_ubatch x n_ctx x (heads + mask) floats,
  plus the logits of the batch.
`gpu_bytes(k)` / `cpu_bytes(k)` split it the way llama.cpp places `n_gpu_layers = k`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from agentworld_local.models.inspect import GgufSummary

KV_BYTES = 2  # f16 cache cells (llama.cpp's default type_k / type_v)
STATE_BYTES = 4  # recurrent states are f32
FLOAT_BYTES = 4
DEFAULT_UBATCH = 512  # engine/llama/ loads with n_batch = n_ubatch = 512


@dataclass(frozen=True)
class LayerCost:
    index: int
    kind: str
    weight_bytes: int  # 0 for an MTP layer llama.cpp skips
    kv_bytes_per_token: int
    state_bytes: int

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

    @property
    def weights_bytes(self) -> int:
        return self.input_bytes + self.output_bytes + sum(layer.weight_bytes for layer in self.layers)

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
    def total_bytes(self) -> int:
        return self.weights_bytes + self.kv_bytes + self.recurrent_bytes + self.compute_bytes

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

    def gpu_bytes(self, gpu_layers: int) -> int:
        """GPU memory for `n_gpu_layers = gpu_layers` (-1 = all): their weights, caches, and compute."""
        if gpu_layers == 0:
            return 0
        layers = self._on_gpu(gpu_layers)
        return self.output_bytes + sum(layer.total(self.n_ctx) for layer in layers) + self.compute_bytes

    def cpu_bytes(self, gpu_layers: int) -> int:
        """Host memory for the rest; a partial offload keeps a host compute buffer too."""
        on_gpu = {layer.index for layer in self._on_gpu(gpu_layers)} if gpu_layers else set()
        rest = sum(layer.total(self.n_ctx) for layer in self.layers if layer.index not in on_gpu)
        everything_offloaded = gpu_layers < 0 or gpu_layers >= self.max_gpu_layers
        output = 0 if gpu_layers else self.output_bytes
        compute = 0 if everything_offloaded else self.compute_bytes
        return self.input_bytes + output + rest + compute

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_ctx": self.n_ctx,
            "weights_bytes": self.weights_bytes,
            "kv_bytes": self.kv_bytes,
            "kv_bytes_per_token": self.kv_bytes_per_token,
            "recurrent_bytes": self.recurrent_bytes,
            "compute_bytes": self.compute_bytes,
            "total_bytes": self.total_bytes,
            "skipped_mtp_bytes": self.skipped_bytes,
            "layers": [
                {"index": layer.index, "kind": layer.kind, "weight_bytes": layer.weight_bytes,
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


def estimate_memory(summary: GgufSummary, n_ctx: int, *, n_ubatch: int = DEFAULT_UBATCH) -> MemoryEstimate:
    """Weights + KV cache for `n_ctx` + recurrent state + compute buffers, per layer where it applies."""
    state = recurrent_state_bytes(summary)
    costs = []
    for layer in summary.layers:
        kv = 0
        if layer.kind == "attention":
            kv = layer.kv_heads * (summary.key_length + summary.value_length) * KV_BYTES
        costs.append(
            LayerCost(
                index=layer.index,
                kind=layer.kind,
                weight_bytes=0 if layer.kind == "mtp" else layer.weight_bytes,
                kv_bytes_per_token=kv,
                state_bytes=state if layer.kind == "recurrent" else 0,
            )
        )
    skipped = sum(layer.weight_bytes for layer in summary.layers if layer.kind == "mtp")
    batch = min(n_ubatch, max(n_ctx, 1))
    has_attention = any(layer.kind == "attention" for layer in summary.layers)
    # Scores for every head plus the shared mask (f32), for a batch against the whole cache.
    per_token = batch * (summary.head_count + 1) * FLOAT_BYTES if has_attention else 0
    # The batch's logits, and activations a few embedding-widths wide.
    fixed = batch * summary.vocab_size * FLOAT_BYTES + batch * summary.embedding_length * FLOAT_BYTES * 16
    return MemoryEstimate(
        n_ctx=n_ctx,
        n_ubatch=batch,
        layers=tuple(costs),
        input_bytes=summary.input_bytes,
        output_bytes=summary.output_bytes,
        skipped_bytes=skipped,
        compute_fixed=fixed,
        compute_per_token=per_token,
        context_length=summary.context_length,
    )

