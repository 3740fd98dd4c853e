"""What a GGUF file holds, read from its header alone (no weights are loaded).

`inspect_gguf(path)` reads the metadata and the tensor index with the `gguf` package and
returns a `GgufSummary`: architecture, layers (MTP/nextn layers included, and which
layers are attention or recurrent), experts, context length, quantization, per-layer
weight sizes and whether a chat template is embedded. `models.memory` turns it into a
memory estimate.

The layers are the ones the file holds: some community GGUFs declare an MTP block they hold
no tensors for; the summary counts the blocks held, and `kv_overrides()` / `layers_notice()`
say what llama.cpp must be told instead of the header, and the user.
"""

from __future__ import annotations

import re
import struct
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gguf
import numpy as np

from agentworld_local.errors import ModelError
from agentworld_local.models.gguf_file import check_gguf_path

_BLOCK = re.compile(r"^blk\.(\d+)\.(.+)$")
# Tensor names that mark a layer with a recurrent state (Mamba / Gated DeltaNet `ssm_*`, RWKV `time_mix_*`).
_RECURRENT_PREFIXES = ("ssm_", "time_mix_")
_ATTENTION_PREFIXES = ("attn_q.", "attn_k.", "attn_v.", "attn_qkv.", "attn_q_a.", "attn_kv_a_mqa.")
# The routed experts' tensors (llama.cpp's LLM_FFN_EXPS_REGEX): what `--cpu-moe` keeps in RAM.
_EXPERT_TENSOR = re.compile(r"^ffn_(up|down|gate|gate_up)_(ch|)exps")
_INPUT_TENSORS = ("token_embd.", "token_types.", "position_embd.", "token_embd_norm.")
_OUTPUT_TENSORS = ("output.", "output_norm.")


class _FastReader(gguf.GGUFReader):
    """GGUFReader that keeps each metadata array as one block instead of one object per item.

    The stock reader builds a numpy view per array element: for a 248k-token vocabulary
    (tokens, scores, merges) that took about 30 seconds here. Numeric arrays become one
    typed view (`contents()` still works); string arrays keep their count only (we never
    need the token texts).
    """

    def _get_field_parts(self, orig_offs: int, raw_type: int) -> tuple[int, list[Any], list[int], list[Any]]:
        if gguf.GGUFValueType(raw_type) != gguf.GGUFValueType.ARRAY:
            return super()._get_field_parts(orig_offs, raw_type)
        raw_itype = self._get(orig_offs, np.uint32)
        alen = self._get(orig_offs + 4, np.uint64)
        item_type = gguf.GGUFValueType(int(raw_itype[0]))
        count = int(alen[0])
        start = orig_offs + 12
        types = [gguf.GGUFValueType.ARRAY, item_type]
        scalar = self.gguf_scalar_to_np.get(item_type)
        if scalar is not None:
            values = self._get(start, scalar, count)
            if len(values) != count:
                raise ValueError("array runs past the end of the file")
            return 12 + int(values.nbytes), [raw_itype, alen, values], [2], types
        if item_type == gguf.GGUFValueType.STRING:
            view = memoryview(self.data)
            order = "<" if self.byte_order == "I" else ">"
            offs = start
            for _ in range(count):
                (length,) = struct.unpack_from(order + "Q", view, offs)
                offs += 8 + length
            if offs > len(self.data):
                raise ValueError("string array runs past the end of the file")
            block = self._get(start, np.uint8, offs - start)
            return offs - orig_offs, [raw_itype, alen, block], [], types
        return super()._get_field_parts(orig_offs, raw_type)  # nested arrays: rare, keep the stock path

    def _build_tensors(self, start_offs: int, fields: list[Any]) -> None:
        # Check the data's extent first: the stock error for a short file is a numpy reshape error.
        end = start_offs
        for item in fields:
            dims, raw_dtype, offset = item.parts[3], item.parts[4], item.parts[5]
            block, type_size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(int(raw_dtype[0]))]
            end = max(end, start_offs + int(offset[0]) + int(np.prod(dims)) * type_size // block)
        if end > len(self.data):
            raise _Truncated(len(self.data), end)
        super()._build_tensors(start_offs, fields)


class _Truncated(Exception):
    def __init__(self, size: int, needed: int) -> None:
        super().__init__(f"{size:,} bytes, but its tensors need {needed:,}")


@dataclass(frozen=True)
class LayerInfo:
    index: int
    kind: str  # "attention" | "recurrent" | "mtp" (llama.cpp skips it) | "other" (no cache, e.g. FFN-only)
    weight_bytes: int
    kv_heads: int = 0  # attention layers: KV heads (GQA)
    expert_bytes: int = 0  # the routed experts' share of weight_bytes


@dataclass(frozen=True)
class RecurrentShape:
    """Sizes that fix the per-sequence recurrent state (llama_hparams::n_embd_r / n_embd_s)."""

    conv_kernel: int = 0
    inner_size: int = 0
    state_size: int = 0
    group_count: int = 0
    wkv_head_size: int = 0  # RWKV
    token_shift_count: int = 2  # RWKV


@dataclass(frozen=True)
class GgufSummary:
    path: Path
    file_size: int
    gguf_version: int
    architecture: str
    name: str | None
    block_count: int  # the blocks the file holds, MTP/nextn layers included (what awl has llama.cpp load)
    nextn_layers: int  # the MTP/nextn layers among them
    context_length: int | None
    embedding_length: int
    head_count: int
    key_length: int
    value_length: int
    vocab_size: int
    expert_count: int
    expert_used_count: int
    expert_shared_count: int
    file_type: str | None  # llama.cpp's file type name, e.g. "Q4_K_M"
    tensor_bytes_by_type: dict[str, int]
    n_params: int
    tensor_bytes: int
    chat_template: bool
    layers: tuple[LayerInfo, ...]
    input_bytes: int  # token embedding: llama.cpp keeps it on the CPU
    output_bytes: int  # output norm + head, as the file holds them
    recurrent: RecurrentShape = field(default_factory=RecurrentShape)
    #: The file has no output head: llama.cpp uses the token embedding (a GPU copy when the output layer is offloaded).
    tied_output: bool = False
    other_bytes: int = 0  # tensors outside the blocks, the embedding and the output (rope factors, ...)
    #: The header's block_count / nextn_predict_layers, when they declare blocks the file does not hold (else as above).
    declared_block_count: int | None = None
    declared_nextn_layers: int | None = None

    @property
    def n_layers(self) -> int:
        """Layers the model runs (MTP layers excluded)."""
        return self.block_count - self.nextn_layers

    @property
    def header_block_count(self) -> int:
        return self.block_count if self.declared_block_count is None else self.declared_block_count

    @property
    def missing_blocks(self) -> int:
        """Blocks the header declares that the file holds no tensors for (MTP layers: it loads without them)."""
        return self.header_block_count - self.block_count

    def kv_overrides(self) -> dict[str, int]:
        """Metadata llama.cpp must read instead of the header's for this file to load: the blocks
        it holds ({} for a file that holds what it declares)."""
        if not self.missing_blocks:
            return {}
        return {f"{self.architecture}.block_count": self.block_count,
                f"{self.architecture}.nextn_predict_layers": self.nextn_layers}

    def layers_notice(self) -> str | None:
        """One line for the user when the header declares blocks the file does not hold, else None."""
        if not self.missing_blocks:
            return None
        declared_mtp = self.declared_nextn_layers or 0
        what = ("no MTP layer" if not self.nextn_layers
                else f"{self.missing_blocks} of its {declared_mtp} MTP layers missing")
        return (f"{self.path.name} declares {self.header_block_count} layers but holds {self.block_count} ({what}): "
                f"loading it as {self.block_count}.")

    @property
    def attention_layers(self) -> int:
        return sum(layer.kind == "attention" for layer in self.layers)

    @property
    def recurrent_layers(self) -> int:
        return sum(layer.kind == "recurrent" for layer in self.layers)

    @property
    def quantization(self) -> str:
        """The file type, or the weight type holding the most bytes when the file does not say."""
        if self.file_type:
            return self.file_type
        return max(self.tensor_bytes_by_type, key=self.tensor_bytes_by_type.__getitem__, default="unknown")

    @property
    def bits_per_weight(self) -> float:
        return 8 * self.tensor_bytes / self.n_params if self.n_params else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "file_size": self.file_size,
            "gguf_version": self.gguf_version,
            "architecture": self.architecture,
            "name": self.name,
            "block_count": self.block_count,
            "nextn_layers": self.nextn_layers,
            "declared_block_count": self.header_block_count,
            "declared_nextn_layers": self.nextn_layers if self.declared_nextn_layers is None else self.declared_nextn_layers,
            "n_layers": self.n_layers,
            "attention_layers": self.attention_layers,
            "recurrent_layers": self.recurrent_layers,
            "expert_count": self.expert_count,
            "expert_used_count": self.expert_used_count,
            "expert_shared_count": self.expert_shared_count,
            "context_length": self.context_length,
            "embedding_length": self.embedding_length,
            "head_count": self.head_count,
            "kv_heads": max((layer.kv_heads for layer in self.layers), default=0),
            "key_length": self.key_length,
            "vocab_size": self.vocab_size,
            "quantization": self.quantization,
            "tensor_bytes_by_type": self.tensor_bytes_by_type,
            "n_params": self.n_params,
            "tensor_bytes": self.tensor_bytes,
            "bits_per_weight": round(self.bits_per_weight, 2),
            "chat_template": self.chat_template,
        }


def _damaged(path: Path, detail: str, name: str | None) -> ModelError:
    step = f"`awl models pull {name}`" if name else "`awl models pull NAME` for a registry model"
    return ModelError(
        f"{path} is truncated or damaged ({detail}).",
        f"Re-download it: {step}, or download the file again.",
    )


def _read(path: Path, name: str | None) -> _FastReader:
    try:
        return _FastReader(path)
    except _Truncated as error:
        raise _damaged(path, str(error), name) from None
    except (ValueError, KeyError, IndexError, OverflowError, struct.error):
        # The stock messages ("cannot reshape array ...") mean the header ends early or is garbage.
        size = path.stat().st_size
        raise _damaged(path, f"{size:,} bytes; its header ends early or is corrupt", name) from None
    except OSError as error:
        raise ModelError(f"Cannot read {path} ({error.strerror or error}).", "Check the file's permissions.") from None


class _Meta:
    def __init__(self, reader: gguf.GGUFReader, arch: str) -> None:
        self.fields, self.arch = reader.fields, arch

    def raw(self, key: str) -> Any:
        item = self.fields.get(key)
        if item is None:
            return None
        if item.types and item.types[0] == gguf.GGUFValueType.ARRAY:
            if item.types[-1] == gguf.GGUFValueType.STRING:
                # _FastReader's layout: key length, key, type, item type, count, one data block
                return int(item.parts[4][0])  # a string array: its length is all we keep
            return item.contents()
        return item.contents()

    def int(self, key: str, default: int = 0, *, arch: bool = True) -> int:
        value = self.raw(f"{self.arch}.{key}" if arch else key)
        if isinstance(value, list):  # per-layer arrays: the largest is the safe figure
            return int(max(value, default=default))
        return default if value is None else int(value)

    def per_layer(self, key: str, n: int, default: int) -> list[int]:
        value = self.raw(f"{self.arch}.{key}")
        if isinstance(value, list):
            return [int(v) for v in value[:n]] + [default] * max(0, n - len(value))
        return [default if value is None else int(value)] * n


def _file_type(value: int | None) -> str | None:
    if value is None:
        return None
    try:
        label = gguf.LlamaFileType(value).name
    except ValueError:
        return f"type {value}"
    return label.removeprefix("MOSTLY_").removeprefix("ALL_")


def held_blocks(declared: int, nextn: int, indexes: set[int]) -> tuple[int, int]:
    """(blocks, MTP layers) to load a file whose tensors are in blocks `indexes` and whose header
    declares `declared` blocks, the last `nextn` of them MTP layers: the declared ones, unless
    the file stops short of its MTP layers (community GGUFs that declare one and hold none of
    its tensors), then only the blocks it holds. Missing trunk blocks are not papered over: the
    load fails and says which tensor is missing."""
    held = max(indexes, default=-1) + 1
    missing = declared - held
    if indexes and 0 < missing <= nextn:
        return held, nextn - missing
    return declared, nextn


def truncation(path: str | Path) -> str | None:
    """Why `path` is shorter than its header and tensor index say it is (its size and the bytes
    its tensors need), or None when all its tensor data is there (or it cannot be read)."""
    file = Path(path)
    try:
        size = file.stat().st_size
        reader = _FastReader(file)
    except _Truncated as error:
        return str(error)
    except (ValueError, KeyError, IndexError, OverflowError, struct.error):
        return f"{size:,} bytes; its header ends early or is corrupt"
    except OSError:
        return None
    end = _data_end(reader)
    return f"{size:,} bytes, but its tensors need {end:,}" if end > size else None


def _data_end(reader: gguf.GGUFReader) -> int:
    """Where the last tensor's data ends, by the tensor index."""
    return max((t.data_offset + t.n_bytes for t in reader.tensors), default=reader.data_offset)


def held_layers_notice(path: str | Path) -> str | None:
    """`layers_notice()` of the GGUF at `path`, None when it holds what it declares or cannot be
    read (its load says what is wrong)."""
    try:
        return inspect_gguf(path).layers_notice()
    except Exception:  # noqa: BLE001 - a damaged file gets its own clear message from the load
        return None


def inspect_gguf(path: str | Path, *, name: str | None = None) -> GgufSummary:
    """Summarise a GGUF from its header; `name` (a registry name) makes error hints exact."""
    file = check_gguf_path(path)
    reader = _read(file, name)
    file_size = file.stat().st_size
    end = _data_end(reader)
    if end > file_size:
        raise _damaged(file, f"{file_size:,} bytes, but its tensors need {end:,}", name)
    arch_field = reader.fields.get("general.architecture")
    if arch_field is None:
        raise _damaged(file, "no `general.architecture` key", name)
    arch = str(arch_field.contents())
    meta = _Meta(reader, arch)

    block_count = meta.int("block_count")
    nextn = meta.int("nextn_predict_layers")
    n_layers = block_count - nextn
    n_embd = meta.int("embedding_length")
    n_head = meta.int("attention.head_count")
    kv_heads = meta.per_layer("attention.head_count_kv", block_count, n_head)
    key_length = meta.int("attention.key_length", n_embd // n_head if n_head else 0)
    value_length = meta.int("attention.value_length", key_length)

    layer_bytes: Counter[int] = Counter()
    expert_bytes: Counter[int] = Counter()
    layer_names: dict[int, list[str]] = {}
    by_type: Counter[str] = Counter()
    input_bytes = output_bytes = other_bytes = n_params = 0
    for tensor in reader.tensors:
        by_type[tensor.tensor_type.name] += int(tensor.n_bytes)
        n_params += int(tensor.n_elements)
        match = _BLOCK.match(tensor.name)
        if match:
            index = int(match.group(1))
            layer_bytes[index] += int(tensor.n_bytes)
            if _EXPERT_TENSOR.match(match.group(2)):
                expert_bytes[index] += int(tensor.n_bytes)
            layer_names.setdefault(index, []).append(match.group(2))
        elif tensor.name.startswith(_INPUT_TENSORS):
            input_bytes += int(tensor.n_bytes)
        elif tensor.name.startswith(_OUTPUT_TENSORS):
            output_bytes += int(tensor.n_bytes)
        else:
            other_bytes += int(tensor.n_bytes)
    # No head: llama.cpp uses the embedding (and copies it for an output layer on the GPU).
    tied = not any(t.name.startswith("output.") for t in reader.tensors)

    declared_blocks, declared_nextn = block_count, nextn
    block_count, nextn = held_blocks(block_count, nextn, set(layer_names))
    n_layers = block_count - nextn

    layers = []
    for index in range(max(block_count, max(layer_names, default=-1) + 1)):
        names = layer_names.get(index, [])
        if index >= n_layers:
            kind = "mtp"
        elif any(n.startswith(_RECURRENT_PREFIXES) for n in names):
            kind = "recurrent"
        elif any(n.startswith(_ATTENTION_PREFIXES) for n in names):
            kind = "attention"
        else:
            kind = "other"
        heads = kv_heads[index] if kind == "attention" and index < len(kv_heads) else 0
        layers.append(LayerInfo(index=index, kind=kind, weight_bytes=layer_bytes[index], kv_heads=heads,
                                expert_bytes=expert_bytes[index]))

    vocab = meta.raw("tokenizer.ggml.tokens")
    shared = meta.int("expert_shared_count")
    if not shared and any(n.startswith("ffn_up_shexp") for names in layer_names.values() for n in names):
        shared = 1  # the file has a shared expert but no count key (qwen35moe)
    return GgufSummary(
        path=file,
        file_size=file_size,
        gguf_version=int(meta.raw("GGUF.version") or 0),
        architecture=arch,
        name=meta.raw("general.name"),
        block_count=block_count,
        nextn_layers=nextn,
        context_length=meta.int("context_length") or None,
        embedding_length=n_embd,
        head_count=n_head,
        key_length=key_length,
        value_length=value_length,
        vocab_size=meta.int("vocab_size", vocab if isinstance(vocab, int) else 0),
        expert_count=meta.int("expert_count"),
        expert_used_count=meta.int("expert_used_count"),
        expert_shared_count=shared,
        file_type=_file_type(meta.raw("general.file_type")),
        tensor_bytes_by_type=dict(by_type.most_common()),
        n_params=n_params,
        tensor_bytes=sum(by_type.values()),
        chat_template=bool(meta.raw("tokenizer.chat_template")),
        layers=tuple(layers),
        input_bytes=input_bytes,
        output_bytes=output_bytes,
        tied_output=tied,
        other_bytes=other_bytes,
        declared_block_count=declared_blocks if declared_blocks != block_count else None,
        declared_nextn_layers=declared_nextn if declared_blocks != block_count else None,
        recurrent=RecurrentShape(
            conv_kernel=meta.int("ssm.conv_kernel"),
            inner_size=meta.int("ssm.inner_size"),
            state_size=meta.int("ssm.state_size"),
            group_count=meta.int("ssm.group_count"),
            wkv_head_size=meta.int("wkv.head_size"),
            token_shift_count=meta.int("token_shift_count", 2),
        ),
    )
