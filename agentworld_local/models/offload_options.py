"""The load options beyond the GPU layer count: experts kept in RAM, flash attention, KV cache
type. Checked when the command line is read (one line, before anything loads); the engine
(engine/llama/placement.py) hands them to llama.cpp, the memory estimate counts them."""

from __future__ import annotations

from dataclasses import dataclass

from agentworld_local.errors import InputError

#: `cpu_moe` value for "every layer's experts stay in RAM" (llama.cpp's --cpu-moe).
ALL_LAYERS = -1
FLASH_ATTN_MODES = ("auto", "on", "off")
#: --speculate: prompt-lookup drafts verified in one batch (engine/llama/speculation.py).
SPECULATE_MODES = ("auto", "on", "off", "mtp")
#: KV cache types offered, with their bytes per cached value (q8_0: 34-byte blocks of 32).
KV_TYPE_BYTES = {"f16": 2.0, "q8_0": 34 / 32}


@dataclass(frozen=True)
class OffloadOptions:
    """How the weights and caches are laid out, beyond the GPU layer count.

    `cpu_moe`: layers whose routed experts stay in RAM (counted from the first layer, as
    llama.cpp's --n-cpu-moe does), ALL_LAYERS for all (--cpu-moe), 0 for none.
    `flash_attn`: auto (llama.cpp decides per device), on, off. `kv_type`: the KV cache's type.
    `speculate`: how the sampling loop decodes, not a layout, but given wherever these are
    (auto: on for attention-only models, off for hybrid ones: speculation.speculation_default).
    `prefetch`: evaluate the next turn's known start while the user types (session/runner/runner.py).
    """

    cpu_moe: int = 0
    flash_attn: str = "auto"
    kv_type: str = "f16"
    speculate: str = "auto"
    prefetch: bool = True

    @classmethod
    def from_flags(cls, *, cpu_moe: bool = False, n_cpu_moe: int | None = None, flash_attn: str = "auto",
                   kv_type: str = "f16", speculate: str = "auto", prefetch: bool = True) -> "OffloadOptions":
        """The options as the command line gives them; InputError for a value that cannot work."""
        if n_cpu_moe is not None and n_cpu_moe < 0:
            raise InputError(f"--n-cpu-moe {n_cpu_moe} must be 0 or more.",
                             "Give the number of layers whose experts stay in RAM, e.g. `--n-cpu-moe 20`, or `--cpu-moe` for all.")
        if cpu_moe and n_cpu_moe is not None:
            raise InputError("--cpu-moe and --n-cpu-moe both say where the experts go.",
                             "Use `--cpu-moe` for every layer's experts, or `--n-cpu-moe N` for the first N layers'.")
        mode = flash_attn.strip().lower()
        if mode not in FLASH_ATTN_MODES:
            raise InputError(f"Unknown --flash-attn `{flash_attn}`.", "Use `--flash-attn auto`, `on` or `off`.")
        kv = kv_type.strip().lower()
        if kv not in KV_TYPE_BYTES:
            raise InputError(f"Unknown --kv-type `{kv_type}`.",
                             f"Use one of: {', '.join(f'`--kv-type {name}`' for name in KV_TYPE_BYTES)}.")
        if kv != "f16" and mode == "off":
            raise InputError(f"A {kv} KV cache needs flash attention (llama.cpp quantizes V only with it).",
                             "Drop `--flash-attn off`, or use `--kv-type f16`.")
        drafts = speculate.strip().lower()
        if drafts not in SPECULATE_MODES:
            raise InputError(f"Unknown --speculate `{speculate}`.", "Use `--speculate auto`, `on`, `off` or `mtp`.")
        return cls(cpu_moe=ALL_LAYERS if cpu_moe else (n_cpu_moe or 0), flash_attn=mode, kv_type=kv, speculate=drafts,
                   prefetch=prefetch)

    @property
    def cpu_moe_label(self) -> str:
        return "all" if self.cpu_moe == ALL_LAYERS else str(self.cpu_moe)

    def check_model(self, expert_count: int, name: str) -> None:
        """Refuse expert offload for a model without experts, before it loads."""
        if self.cpu_moe and not expert_count:
            flag = "--cpu-moe" if self.cpu_moe == ALL_LAYERS else f"--n-cpu-moe {self.cpu_moe}"
            raise InputError(f"{flag} keeps a mixture-of-experts model's experts in RAM, but {name} has no experts.",
                             f"Drop {flag}; `--gpu-layers N` splits a dense model between GPU and CPU.")
