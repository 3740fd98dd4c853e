"""A tiny `llama` GGUF with a huge KV cache per token, to run out of memory for real.

4 KV heads of dim 8192 in 2 layers: 256 KiB of f16 cache per token, so a context of a few
hundred thousand tokens asks for more memory than a machine (or a GPU) has, while the
weights stay tiny and the model still loads at its trained 4,096-token context.
Used by the out-of-memory retry tests and by bench/gpu_check.sh.
"""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np

from agentworld_local.fixtures import tiny_gguf

TRAINED_CTX = 4096


def write_wide_kv_llama(path: Path) -> int:
    """Write the model to `path`; return its KV cache bytes per token."""
    writer = gguf.GGUFWriter(str(path), "llama")
    n_vocab = tiny_gguf._add_tokenizer(writer, tiny_gguf.CHATML_TEMPLATE)
    d, heads, head_dim, ff, layers = 8, 4, 8192, 16, 2
    for key, value in (("context_length", TRAINED_CTX), ("embedding_length", d), ("block_count", layers),
                       ("feed_forward_length", ff), ("attention.head_count", heads),
                       ("attention.head_count_kv", heads), ("attention.key_length", head_dim),
                       ("attention.value_length", head_dim), ("rope.dimension_count", head_dim),
                       ("vocab_size", n_vocab)):
        writer.add_uint32(f"llama.{key}", value)
    writer.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-5)
    writer.add_float32("llama.rope.freq_base", 10000.0)
    rng = np.random.default_rng(0)

    def mat(name: str, *shape: int) -> None:
        writer.add_tensor(name, (rng.standard_normal(shape) * 0.02).astype(np.float16))

    mat("token_embd.weight", n_vocab, d)
    writer.add_tensor("output_norm.weight", np.ones(d, np.float32))
    mat("output.weight", n_vocab, d)
    for i in range(layers):
        block = f"blk.{i}."
        writer.add_tensor(block + "attn_norm.weight", np.ones(d, np.float32))
        mat(block + "attn_q.weight", heads * head_dim, d)
        mat(block + "attn_k.weight", heads * head_dim, d)
        mat(block + "attn_v.weight", heads * head_dim, d)
        mat(block + "attn_output.weight", d, heads * head_dim)
        writer.add_tensor(block + "ffn_norm.weight", np.ones(d, np.float32))
        mat(block + "ffn_gate.weight", ff, d)
        mat(block + "ffn_up.weight", ff, d)
        mat(block + "ffn_down.weight", d, ff)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return layers * 2 * heads * head_dim * 2
