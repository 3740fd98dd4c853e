"""A whole session against an ideal append-only loop over the same tokens (target: at most 1.05x),
and the Python work per generated token outside decode and sampling (target: within 3x).

awl: a World on a loaded model runs a terminal session of TURNS actions, greedy, `--think
off`, each turn through `World.step` as every face drives it (rendering, tokenizing, the known
start evaluated first, the sampling loop, detokenizing, the answer rules, the events).

Ideal: the same llama.cpp context, cleared, then for each turn the tokens awl appended before
its answer in one decode per n_batch chunk, and awl's answer tokens one at a time: greedy
sample, decode, detokenize (incrementally to text), nothing else. It must sample the tokens
awl did (checked: `same tokens`).

Both sides' llama_decode and sampler calls are timed by the same wrappers; the rest of each
side's wall time, per generated token, is its Python work. Sides alternate over the runs
(awl, ideal, awl, ideal, ...) and the median of each is kept, so a busy neighbour slows both.

    .venv/bin/python bench/session_loop.py [--quick]
"""

from __future__ import annotations

import array
import codecs
import ctypes
import contextlib
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import llama_cpp  # noqa: E402 - the ideal loop is llama.cpp's own calls

from bench_models import LABELS, evaluated, gpu_layers, model, print_section, table  # noqa: E402

from agentworld_local.domains import get_domain  # noqa: E402
from agentworld_local.engine import events  # noqa: E402
from agentworld_local.engine.llama import LlamaBackend, checkpoints  # noqa: E402
from agentworld_local.engine.settings import SessionSettings  # noqa: E402
from agentworld_local.engine.types import SamplingConfig, ThinkBudget  # noqa: E402
from agentworld_local.engine.world import World  # noqa: E402
from agentworld_local.models.offload_options import OffloadOptions  # noqa: E402

N_CTX, N_BATCH = 8192, 512
ACTIONS = ["ls -la", "cat README.md", "git status", "pwd", "make test", "cd src", "ls", "python main.py",
           "git diff", "uname -a", "df -h", "whoami", "echo hello", "cat setup.py", "pip list", "git log -3",
           "cd ..", "find . -name '*.py'", "wc -l main.py", "head -5 main.py", "date", "env | head", "ps aux",
           "free -m", "history | tail -3", "mkdir build", "cd build", "cmake ..", "make", "./app --help"]


@contextlib.contextmanager
def timed_calls() -> Iterator[dict]:
    """Seconds inside llama_decode and llama_sampler_sample (module attributes: awl's batcher and
    sampler and the ideal loop look them up at each call), and awl's decodes, while inside."""
    spent: dict = {"decode": 0.0, "sample": 0.0, "calls": [], "turn": 0}
    originals = {"decode": llama_cpp.llama_decode, "sample": llama_cpp.llama_sampler_sample}

    def wrap(name: str):
        function = originals[name]

        def wrapper(*args):
            started = time.perf_counter()
            try:
                return function(*args)
            finally:
                spent[name] += time.perf_counter() - started
                batch = args[1] if name == "decode" else None
                if batch is not None and batch.pos:  # awl's batches say their positions; get_one's do not
                    # One C copy (the bench's own work, timed as awl's Python): ints once it is over.
                    spent["calls"].append((spent["turn"], batch.pos[0], ctypes.string_at(batch.token, 4 * batch.n_tokens)))
        return wrapper

    # The package and its ctypes module both: llama-cpp-python's sampler calls the latter's.
    modules = (llama_cpp, llama_cpp.llama_cpp)
    wrapped = {"decode": wrap("decode"), "sample": wrap("sample")}
    for module in modules:
        module.llama_decode, module.llama_sampler_sample = wrapped["decode"], wrapped["sample"]
    try:
        yield spent
    finally:
        for module in modules:
            module.llama_decode, module.llama_sampler_sample = originals["decode"], originals["sample"]
        spent["calls"] = [(turn, pos, tuple(array.array("i", tokens))) for turn, pos, tokens in spent["calls"]]


def awl_session(backend: LlamaBackend, turns: int, max_tokens: int) -> dict[str, object]:
    """Wall seconds of `turns` turns (each from the action to TurnFinished), the time inside
    decode and sampling, and each turn's (prompt tokens, generated tokens)."""
    backend.reset()
    settings = SessionSettings(sampling=SamplingConfig(temperature=0, max_tokens=max_tokens),
                               think=ThinkBudget.parse("off"), seed=1)
    world = World(backend, get_domain("terminal"), settings)
    shape, wall = [], 0.0
    with timed_calls() as spent:
        for turn, action in enumerate(ACTIONS[:turns]):
            spent["turn"] = turn
            started = time.perf_counter()
            for event in world.step(action):
                if isinstance(event, events.TurnFinished):
                    record = event.record
            wall += time.perf_counter() - started
            shape.append((record.tokens["prompt_total"], record.tokens["generated"]))
    return {"wall": wall, **spent, "shape": shape, "tokens": evaluated(backend)}


def ideal_session(backend: LlamaBackend, calls: list, shape: list[tuple[int, int]]) -> dict[str, object]:
    """awl's llama_decode calls again, on its context (cleared first), through llama.cpp alone:
    the same tokens in the same batches (a different split moves logits in their last bits), an
    answer token sampled greedily before its decode and detokenized; where awl went back (a
    turn's answer replaced by its history form), the same step back: the attention cache
    trimmed, and a hybrid model's recurrent state set from a copy taken when the loop passed
    that position (one per turn, as awl keeps)."""
    backend.reset()
    llm, stateful = backend._llm, backend._stateful
    memory = llama_cpp.llama_get_memory(llm.ctx)
    llama_cpp.llama_memory_clear(memory, True)
    sampler = llama_cpp.llama_sampler_init_greedy()
    answers = [range(prompt, prompt + generated) for prompt, generated in shape]
    targets, end = set(), 0
    for _, pos, tokens in calls:
        if pos < end:
            targets.add(pos)
        end = pos + len(tokens)
    arrays = [(llama_cpp.llama_token * len(tokens))(*tokens) for _, _, tokens in calls]
    sampled, expected, states, text = [], [], {}, []
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    try:
        with timed_calls() as spent:
            started = time.perf_counter()
            end = 0
            for (turn, pos, tokens), array in zip(calls, arrays):
                if pos < end:
                    if stateful:
                        checkpoints.set_state(llm.ctx, states[pos], 0)
                    llama_cpp.llama_memory_seq_rm(memory, 0, pos, -1)
                if len(tokens) == 1 and pos in answers[turn]:
                    token = llama_cpp.llama_sampler_sample(sampler, llm.ctx, -1)
                    sampled.append(token)
                    expected.append(tokens[0])
                    array[0] = token
                    text.append(decoder.decode(llm.detokenize([token], special=True)))
                code = llama_cpp.llama_decode(llm.ctx, llama_cpp.llama_batch_get_one(array, len(tokens)))
                if code != 0:
                    raise RuntimeError(f"llama_decode failed ({code}) at {pos}+{len(tokens)}")
                end = pos + len(tokens)
                if stateful and end in targets:
                    states[end] = checkpoints.copy_state(llm.ctx, 0)
            wall = time.perf_counter() - started
    finally:
        llama_cpp.llama_sampler_free(sampler)
        llama_cpp.llama_memory_clear(memory, True)
        backend.reset()
    return {"wall": wall, **spent, "same": sampled == expected}


def measure(path: Path, turns: int, max_tokens: int, repeats: int) -> dict[str, object]:
    """awl without drafting (the ideal loop drafts nothing) against the ideal loop, and awl as it
    runs by default (`--speculate auto`) beside them."""
    backend = LlamaBackend(path, n_ctx=N_CTX, n_batch=N_BATCH, gpu_layers=gpu_layers(), notice=lambda text: None,
                           offload=OffloadOptions(speculate="off"))
    drafting = LlamaBackend(path, n_ctx=N_CTX, n_batch=N_BATCH, gpu_layers=gpu_layers(), notice=lambda text: None)
    awl, ideal, auto, same = [], [], [], True
    try:
        for _ in range(repeats):
            run = awl_session(backend, turns, max_tokens)
            awl.append(run)
            result = ideal_session(backend, run["calls"], run["shape"])
            ideal.append(result)
            same = same and result["same"]
            auto.append(awl_session(drafting, turns, max_tokens)["wall"])
    finally:
        backend.close()
        drafting.close()
    generated = sum(g for _, g in awl[-1]["shape"])

    def median(runs: list[dict], key) -> float:
        return statistics.median(key(r) for r in runs)

    def python(r: dict) -> float:
        return r["wall"] - r["decode"] - r["sample"]

    return {"turns": turns, "generated": generated, "context": awl[-1]["shape"][-1][0] + awl[-1]["shape"][-1][1],
            "awl_s": median(awl, lambda r: r["wall"]), "ideal_s": median(ideal, lambda r: r["wall"]),
            "awl_decode_s": median(awl, lambda r: r["decode"]), "ideal_decode_s": median(ideal, lambda r: r["decode"]),
            "awl_py_us": median(awl, python) / generated * 1e6, "ideal_py_us": median(ideal, python) / generated * 1e6,
            "same": same, "auto_s": statistics.median(auto), "drafting": drafting.speculate}


def section(quick: bool) -> str:
    kinds, turns, max_tokens, repeats = (["tiny"], 5, 16, 2) if quick else (["gemma", "big"], 20, 48, 2)
    rows = []
    for kind in kinds:
        path = model(kind)
        if path is None:
            rows.append([LABELS[kind], "not installed"] + [""] * 10)
            continue
        r = measure(path, turns, max_tokens, repeats)
        rows.append([LABELS[kind], f"{r['turns']} turns, {r['generated']:,} generated, {r['context']:,} in context",
                     f"{r['awl_s']:.2f}", f"{r['ideal_s']:.2f}", f"{r['awl_s'] / r['ideal_s']:.3f}",
                     f"{1 + (r['awl_py_us'] - r['ideal_py_us']) * r['generated'] / 1e6 / r['ideal_s']:.3f}",
                     f"{r['awl_decode_s']:.2f} / {r['ideal_decode_s']:.2f}",
                     f"{r['awl_py_us']:.0f}", f"{r['ideal_py_us']:.0f}", f"{r['awl_py_us'] / r['ideal_py_us']:.2f}",
                     "yes" if r["same"] else "no",
                     f"{r['auto_s']:.2f} ({r['auto_s'] / r['ideal_s']:.3f}, drafting {'on' if r['drafting'] else 'off'})"])
    return "\n\n".join([
        "## A whole session against an ideal append-only loop",
        f"A terminal session on a loaded model, greedy, `--think off`, at most {max_tokens} tokens a turn, n_ctx "
        f"{N_CTX:,}: awl's `World.step` per action (rendering, tokenizing, the known start evaluated first, the "
        "sampling loop, detokenizing, the answer rules, the events), `--speculate off`, against an ideal loop on the "
        "same context over the same tokens in the same llama_decode calls (each prompt chunk as awl decoded it, "
        "then greedy sample, decode and detokenize per answer token, nothing else). The last column is awl as it "
        f"runs by default (`--speculate auto`), against the same ideal. Median of {repeats} alternating runs. "
        "Python µs per token: "
        "a side's wall time outside llama_decode and llama_sampler_sample (timed by the same wrappers on both "
        "sides), per generated token, the per-turn work (rendering, tokenizing) included. The same llama_decode "
        "calls take a few percent more or less from one run to the next on a shared machine, so beside the wall "
        "ratio is the one with both sides' decoding the ideal's: ideal seconds plus awl's extra Python work, "
        "over ideal seconds. Targets: session awl / ideal at most 1.05, Python awl / ideal at most 3.",
        table(["model", "session", "awl s", "ideal s", "awl / ideal", "awl / ideal, same decoding", "decode s (awl / ideal)",
               "awl Python µs/token", "ideal Python µs/token", "Python awl / ideal", "same tokens",
               "awl auto s (/ ideal)"], rows),
    ])


if __name__ == "__main__":
    print_section(section, __doc__)
