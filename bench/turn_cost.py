"""Turn cost over a long session: awl's append-only context vs. plain chat completion.

Prints numbers measured in one run (no pass/fail): for a 40-turn terminal session on a
hybrid `qwen35moe` fixture (wider than the test fixture), the time of turn 40 relative to
turn 1, and what an undo to turn 10 costs. The baseline is llama-cpp-python's
`create_chat_completion` with the full message list each turn, which is what users get
from a chat API: every turn re-evaluates the whole history on a hybrid model.
`section(quick)` is the performance report's section (bench/performance.py).

    .venv/bin/python bench/turn_cost.py [--turns 40] [--tokens 24] [--section [--quick]]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import sys

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_models import LABELS, bench_model, model, repacking_as_awl, table  # noqa: E402

from agentworld_local.domains import get_domain
from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.world import World

ACTIONS = ["ls -la", "cd src", "cat main.py", "python main.py", "git status", "git diff", "pwd", "ls", "make test", "C-c"]


def awl_session(model: Path, turns: int, tokens: int, threads: int | None, n_ctx: int = 32768) -> dict[str, float]:
    backend = LlamaBackend(model, n_ctx=n_ctx, gpu_layers=0, threads=threads)
    settings = SessionSettings(sampling=SamplingConfig(temperature=0.6, max_tokens=tokens), think=ThinkBudget.parse("off"), seed=1)
    world = World(backend, get_domain("terminal"), settings)
    records = [world.run_turn(ACTIONS[i % len(ACTIONS)]) for i in range(turns)]
    first, last = records[0], records[-1]
    back = min(10, turns - 1)
    world.undo(to_turn=back)
    redo = world.run_turn(ACTIONS[back % len(ACTIONS)])
    backend.close()
    return {
        "records": records,
        "back": back,
        "turn1_s": first.timings["total_s"],
        "turnN_s": last.timings["total_s"],
        "turnN_prompt_evaluated": last.tokens["prompt_evaluated"],
        "turnN_prompt_total": last.tokens["prompt_total"],
        "undo_reevaluated": redo.tokens["prompt_evaluated"],
        "undo_restore_ms": redo.timings["restore_s"] * 1000,
        "same_after_undo": float(redo.raw_output == records[back].raw_output),
    }


def chat_completion_session(
    model: Path, turns: int, tokens: int, threads: int | None, n_ctx: int = 32768, *,
    history: list | None = None, calls: set[int] | None = None,
) -> dict[str, float]:
    """The baseline: one `create_chat_completion` per turn with the full message list. With
    `history` (awl's records), the lists hold awl's own turns, so both methods see the same
    text; `calls` (0-based turns) limits the calls made: a hybrid model re-evaluates the whole
    list at every call anyway, and a call right before the last one keeps llama-cpp-python's
    prefix cache as warm as a whole session would."""
    from llama_cpp import Llama  # the baseline only; the package itself imports llama_cpp in engine/llama/

    with repacking_as_awl():
        llm = Llama(model_path=str(model), n_ctx=n_ctx, n_gpu_layers=0, n_threads=threads, verbose=False, seed=1)
    # Same prompts as awl sends, so only the context handling differs.
    shadow = World(None, get_domain("terminal"), SessionSettings())
    times, sent = {}, 0
    for i in range(turns):
        if history is not None:
            shadow.history = list(history[:i])
            prompt = history[i].prompt
        else:
            prompt = shadow.turn_prompt(get_domain("terminal").parse_action(ACTIONS[i % len(ACTIONS)]))
        if calls is not None and i not in calls:
            continue
        messages = shadow.messages_for(prompt)
        started = time.perf_counter()
        reply = llm.create_chat_completion(messages=messages, max_tokens=tokens, temperature=0.6, top_p=0.95, top_k=20)
        times[i] = time.perf_counter() - started
        sent = reply["usage"]["prompt_tokens"]
        if history is None:
            shadow.history.append(_record(shadow, prompt, reply["choices"][0]["message"]["content"] or ""))
    llm.close()
    return {"turn1_s": times[0], "turnN_s": times[turns - 1], "turnN_prompt_total": sent}


def _record(world: World, prompt: str, observation: str):
    from agentworld_local.trajectory.schema import TurnRecord

    return TurnRecord(action="", prompt=prompt, observation=observation, id=len(world.history) + 1)


def section(quick: bool) -> str:
    """The report's section: turn N / turn 1 for awl and for chat completion, per model."""
    turns, tokens, n_ctx = (3, 8, 8192) if quick else (40, 24, 32768)
    kinds = ["tiny"] if quick else ["big", "gemma"]
    rows = []
    for kind in kinds:
        path = model(kind)
        if path is None:
            rows.append([LABELS[kind], "not installed", "", "", "", ""])
            continue
        ours = awl_session(path, turns, tokens, None, n_ctx)
        base = chat_completion_session(path, turns, tokens, None, n_ctx, history=ours["records"],
                                       calls={0, turns - 2, turns - 1})
        rows.append([LABELS[kind], "awl (append-only, checkpoints)", f"{ours['turn1_s']:.3f}", f"{ours['turnN_s']:.3f}",
                     f"{ours['turnN_s'] / ours['turn1_s']:.2f}x",
                     f"{ours['turnN_prompt_evaluated']} of {ours['turnN_prompt_total']}"])
        rows.append(["", "create_chat_completion, full message list", f"{base['turn1_s']:.3f}", f"{base['turnN_s']:.3f}",
                     f"{base['turnN_s'] / base['turn1_s']:.2f}x", f"{base['turnN_prompt_total']} sent"])
        rows.append(["", f"awl undo to turn {ours['back']}, turn re-run", "", f"{ours['undo_restore_ms']:.2f} ms restore", "",
                     f"{ours['undo_reevaluated']} re-evaluated, same output: {bool(ours['same_after_undo'])}"])
    return "\n\n".join([
        "## Per-turn cost over a session",
        f"A {turns}-turn terminal session, {tokens} tokens generated per turn (thinking off, temperature 0.6, "
        f"a {n_ctx:,}-token context), "
        "timed per turn in awl and with llama-cpp-python's `create_chat_completion` given the full message list "
        "of the same session (awl's turns; same model, one run). The baseline calls turn 1, then the last two turns "
        "(the one before the last warms its prefix cache as a whole session would). A flat cost keeps the last "
        "turn / turn 1 near 1.",
        table(["model", "method", "turn 1 s", f"turn {turns} s", f"turn {turns} / turn 1",
               f"prompt tokens at turn {turns}"], rows),
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--section", action="store_true", help="print the report's section instead")
    parser.add_argument("--quick", action="store_true", help="with --section: small sizes")
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--tokens", type=int, default=24, help="tokens generated per turn (both methods)")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--skip-baseline", action="store_true")
    args = parser.parse_args()
    if args.section:
        print(section(args.quick))
        return
    with tempfile.TemporaryDirectory() as tmp:
        model = bench_model(Path(tmp))
        ours = awl_session(model, args.turns, args.tokens, args.threads)
        print(f"awl append-only context, {args.turns} turns, {args.tokens} tokens per turn:")
        print(f"  turn 1 {ours['turn1_s']:.3f}s, turn {args.turns} {ours['turnN_s']:.3f}s, "
              f"ratio {ours['turnN_s'] / ours['turn1_s']:.2f}x")
        print(f"  turn {args.turns} evaluated {ours['turnN_prompt_evaluated']} of {ours['turnN_prompt_total']} prompt tokens")
        print(f"  undo to turn {ours['back']} + re-run the next turn: {ours['undo_reevaluated']} tokens re-evaluated, "
              f"restore {ours['undo_restore_ms']:.2f} ms, same output as before: {bool(ours['same_after_undo'])}")
        if not args.skip_baseline:
            base = chat_completion_session(model, args.turns, args.tokens, args.threads)
            print("llama-cpp-python create_chat_completion (full message list each turn):")
            print(f"  turn 1 {base['turn1_s']:.3f}s, turn {args.turns} {base['turnN_s']:.3f}s, "
                  f"ratio {base['turnN_s'] / base['turn1_s']:.2f}x")


if __name__ == "__main__":
    main()
