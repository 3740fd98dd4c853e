"""Prompt tokens `awl bench predict` evaluates over a whole benchmark file: with prefix reuse
(consecutive turns of a trajectory share the context, and trajectories with the same system
prompt share its checkpoint) vs. without the system-prompt checkpoint vs. each row from scratch.

Prints numbers measured in one run (no pass/fail). Without FILE it writes a synthetic file
in the AgentWorldBench layout (one row per turn, each row carrying its trajectory's turns;
every trajectory its own task, all with one long system prompt of tool definitions, as the
mcp and search files have) and runs it on a hybrid `qwen35moe` fixture (hidden 512, as
bench/turn_cost.py), so the recurrent-state checkpoints are what is measured. "From scratch"
really runs every row again on an emptied context; it is also the sum of the rows' prompt sizes.

    .venv/bin/python bench/predict_prefix.py [FILE] [--model GGUF] [--trajectories 4] [--turns 4] [--tools 30] [--tokens 16]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from agentworld_local.agentworldbench.predict import predict_rows
from agentworld_local.agentworldbench.predictions import PredictionsFile, RunSettings
from agentworld_local.agentworldbench.rows import read_bench_rows
from agentworld_local.agentworldbench.selection import lines_of, work_order
from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.fixtures.tiny_gguf import write_qwen35moe_fixture

BENCH_SIZES = dict(n_embd=512, head_dim=64, n_rot=16, rope_sections=[4, 2, 2, 0], ssm_d_state=64, n_ff_exp=256, n_ff_shexp=512)
SYSTEM = (
    "# Role and Objective\nYou simulate an MCP server for an agent. Predict each tool's result.\n\n"
    "# Output Format\nThink first, then write the result inside <predicted_observation> tags.\n\n# Tools\n"
)


def system_prompt(tools: int) -> str:
    """The system prompt with `tools` tool definitions (each about 60 tokens)."""
    definitions = [{"name": f"records_{n}", "description": f"Reads, lists or updates the records of store {n}.",
                    "input_schema": {"type": "object", "properties": {"key": {"type": "string"}, "limit": {"type": "integer"}},
                                     "required": ["key"]}} for n in range(tools)]
    return SYSTEM + json.dumps(definitions, indent=1)
COMMANDS = ["ls -la", "cd src", "cat main.py", "python main.py", "git status", "git diff", "pwd", "make test", "ls tests", "C-c"]


def synthetic_file(path: Path, trajectories: int, turns: int, tools: int) -> Path:
    """`trajectories` x `turns` rows, one per turn, in the benchmark's row layout."""
    lines, system = [], system_prompt(tools)
    for number in range(trajectories):
        prompts, responses = [], []
        for turn in range(1, turns + 1):
            action = json.dumps([{"keystrokes": COMMANDS[(number + turn) % len(COMMANDS)] + "\n", "duration": 1.0}])
            head = f"### Turn {turn}\n"
            if turn == 1:
                head += f"**Task Instruction:**\nFix the failing build of project {number}.\n\n**Current State:**\nroot@box:/app# \n\n"
            prompts.append(f"{head}**Action:**\n{action}")
            screen = "\n".join(f"line {i} of the output of turn {turn}: some text the command printed" for i in range(6))
            responses.append(f"**Environment Observation:**\n{screen}\nroot@box:/app# ")
        for turn in range(1, turns + 1):
            lines.append({"task": "terminal", "id": number, "prompt": prompts, "response": responses,
                          "current_prompt": prompts[turn - 1], "system_str": system, "turn_idx": turn, "total_turns": turns})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


class WithoutSystemCheckpoint(LlamaBackend):
    """The backend as it was before bench predict kept a checkpoint after the system message."""

    checkpoint_system_prompt = property(lambda self: False, lambda self, value: None)  # type: ignore[assignment]


def run(backend: LlamaBackend, bench: Path, out: Path, settings: RunSettings, *, from_scratch: bool) -> dict[str, float]:
    rows = read_bench_rows(bench)
    predictions = PredictionsFile.open(out, lines_of(rows), settings, source=bench)
    evaluated = total = 0
    backend.reset()
    started = time.perf_counter()
    for row in work_order(rows):
        if from_scratch:
            backend.reset()
        for event in predict_rows([row], backend, settings, predictions):
            tokens = event.side["tokens"]
            evaluated += tokens["prompt_evaluated"]
            total += tokens["prompt_total"]
    predictions.close()
    return {"rows": len(rows), "evaluated": evaluated, "total": total, "seconds": time.perf_counter() - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", type=Path, help="An AgentWorldBench file (default: a synthetic one).")
    parser.add_argument("--model", type=Path, help="A GGUF (default: a hybrid qwen35moe fixture).")
    parser.add_argument("--trajectories", type=int, default=4)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--tools", type=int, default=30, help="Tool definitions in the synthetic system prompt.")
    parser.add_argument("--tokens", type=int, default=16, help="Answer tokens per row (thinking off).")
    parser.add_argument("--ctx", type=int, default=16384)
    parser.add_argument("--threads", type=int)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        bench = args.file or synthetic_file(directory / "synthetic_test.jsonl", args.trajectories, args.turns, args.tools)
        model = args.model or write_qwen35moe_fixture(directory / "bench-qwen35moe.gguf", **BENCH_SIZES)
        options = dict(n_ctx=args.ctx, gpu_layers=0, threads=args.threads, notice=lambda text: None)
        settings = RunSettings(model.name, SamplingConfig(max_tokens=args.tokens), ThinkBudget.parse("off"), 0)
        backend = LlamaBackend(model, **options)
        reuse = run(backend, bench, directory / "reuse.jsonl", settings, from_scratch=False)
        scratch_run = run(backend, bench, directory / "scratch.jsonl", settings, from_scratch=True)
        backend.close()
        backend = WithoutSystemCheckpoint(model, **options)
        turns_only = run(backend, bench, directory / "turns.jsonl", settings, from_scratch=False)
        backend.close()
    print(f"file: {args.file or f'synthetic, {args.trajectories} trajectories x {args.turns} turns, {args.tools} tools'}; "
          f"{reuse['rows']} rows; model {model.name}")
    print(f"prompt tokens of all rows (each row's whole prompt): {reuse['total']:,}")
    print(f"evaluated by awl bench predict (turns and system prompt shared): {reuse['evaluated']:,}  in {reuse['seconds']:.2f} s")
    print(f"evaluated without the system-prompt checkpoint (turns only):     {turns_only['evaluated']:,}  in {turns_only['seconds']:.2f} s")
    print(f"evaluated from scratch (context emptied each row):              {scratch_run['evaluated']:,}  in {scratch_run['seconds']:.2f} s")
    print(f"system-prompt checkpoint: {turns_only['evaluated'] / reuse['evaluated']:.2f}x fewer prompt tokens than turns only; "
          f"all reuse: {scratch_run['evaluated'] / reuse['evaluated']:.2f}x fewer than from scratch "
          f"({scratch_run['seconds'] / reuse['seconds']:.2f}x the time)")


if __name__ == "__main__":
    main()
