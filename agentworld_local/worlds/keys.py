"""The keys of a shared world: everything that shapes a prediction, hashed.

A turn's key holds the model, the domain, the system prompt (scenario, world description,
tools), the sampling settings, the thinking budget, the session's seed, every earlier turn of
the branch (its prompt, which holds the action and the control instructions it carried, and the
observation the world gave) and this turn's prompt. The sample (which regenerate) is beside
the key, not in it. Earlier observations are in the key because a regenerated turn changes
what every later turn sees; within a world they are themselves answers from the store.

The key does not hold how the conversation was cut to fit a context window (that is the
backend's; a long session on a small context is a different prompt for the model, not a
different world), nor which process, batch or backend decoded it.

A read's key (worlds/reads.py) holds the same settings but no seed and no history: a page the
world has shown is that page in every episode of the world.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

#: Bumped when what a key holds changes: old answers are then simply not found.
KEY_FORMAT = 1


@dataclass(frozen=True)
class WorldInputs:
    """What every key of one session's world starts from."""

    model: str
    domain: str
    system_prompt: str
    sampling: dict[str, Any]
    think: str
    seed: int

    def _fixed(self) -> list[Any]:
        return [KEY_FORMAT, model_identity(self.model), self.domain, self.system_prompt, sorted(self.sampling.items()), self.think]

    def turn_key(self, earlier: Iterable[tuple[str, str]], prompt: str) -> str:
        """The key of the turn sent with `prompt` after the `earlier` turns (prompt, observation)."""
        digest = hashlib.sha256(_canonical(["turn", *self._fixed(), self.seed]))
        for turn in earlier:
            digest.update(_canonical(list(turn)))
        digest.update(_canonical(["now", prompt]))
        return "t:" + digest.hexdigest()

    def read_key(self, read: str) -> str:
        """The key of an action that only reads the world (its canonical text, worlds/reads.py)."""
        return "r:" + hashlib.sha256(_canonical(["read", *self._fixed(), read])).hexdigest()


def model_identity(name: str) -> str:
    """The model as a world knows it: its name without a folder, a `.gguf` suffix or case, so a
    GGUF loaded here (`tiny-qwen.gguf`) and the same file served as `tiny-qwen` share a world."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    return (base[: -len(".gguf")] if base.lower().endswith(".gguf") else base).lower()


def _canonical(value: Any) -> bytes:
    # ASCII JSON: a lone surrogate in an action becomes its escape instead of failing to encode.
    return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"
