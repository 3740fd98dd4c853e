"""What a context cut costs: prompt tokens evaluated per turn across the cuts.

Prints numbers measured in one run (no pass/fail): a terminal session on the tiny hybrid
`qwen35moe` fixture in a small context (`--ctx`), one line per turn with the prompt's
tokens, the tokens evaluated for it, and the turns the model no longer sees. With the
append-only core a cut re-evaluates the kept history once; the turns after it evaluate
only their new tokens again.

    .venv/bin/python bench/context_policy.py [--ctx 1024] [--turns 40] [--tokens 24]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from agentworld_local.domains import get_domain
from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.world import World
from agentworld_local.engine.events import ContextTrimmed, TurnFinished
from agentworld_local.fixtures.tiny_gguf import ensure_fixture

ACTIONS = ["ls -la", "cd src", "cat main.py", "python main.py", "git status", "git diff", "pwd", "ls", "make test", "C-c"]
SYSTEM = "You simulate a Linux terminal. Answer with the screen the action leaves."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ctx", type=int, default=1024)
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--tokens", type=int, default=24, help="max tokens per observation")
    parser.add_argument("--think", default="4")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        model = ensure_fixture("qwen35moe", Path(directory))
        backend = LlamaBackend(model, n_ctx=args.ctx, gpu_layers=0, notice=lambda text: None)
        settings = SessionSettings(
            sampling=SamplingConfig(temperature=0.8, max_tokens=args.tokens), think=ThinkBudget.parse(args.think),
            seed=1, task="find why the build fails", system_prompt=SYSTEM,
        )
        world = World(backend, get_domain("terminal"), settings)
        print(f"context {args.ctx:,} tokens; think {args.think}; max tokens {args.tokens}")
        print(f"{'turn':>4} {'prompt':>7} {'evaluated':>9} {'restore ms':>10}  omitted")
        cuts, evaluated_after = [], []
        for number in range(1, args.turns + 1):
            cut = None
            for event in world.step(ACTIONS[(number - 1) % len(ACTIONS)]):
                if isinstance(event, ContextTrimmed):
                    cut = event
                elif isinstance(event, TurnFinished):
                    record = event.record
            omitted = record.context["omitted_turns"] if record.context else None
            note = f"{omitted['first']}-{omitted['last']}" if omitted else "-"
            if cut is not None:
                note += f"  CUT {cut.tokens_before:,} -> {cut.tokens_after:,} tokens"
                cuts.append(record)
            elif cuts and world.history[-2] is cuts[-1]:
                evaluated_after.append(record)
            tokens = record.tokens
            print(f"{number:>4} {tokens['prompt_total']:>7,} {tokens['prompt_evaluated']:>9,} "
                  f"{record.timings['restore_s'] * 1000:>10.2f}  {note}")
        backend.close()
    steady = [r.tokens["prompt_evaluated"] for r in world.history[1:] if r not in cuts]
    print(f"cuts: {len(cuts)} in {args.turns} turns")
    if cuts:
        at_cut = [r.tokens["prompt_evaluated"] for r in cuts]
        print(f"evaluated at a cut: {min(at_cut)}-{max(at_cut)} tokens; "
              f"on the turn after: {[r.tokens['prompt_evaluated'] for r in evaluated_after]}; "
              f"other turns: {min(steady)}-{max(steady)}")


if __name__ == "__main__":
    main()
