"""The README's first live try, timed: `awl run actions.txt --model gemma-3-270m --think off --max-tokens 128`.

Runs the README's commands as written (issue 45), each side in a new private AWL_HOME (never
the user's: no state cache, so the first turn evaluates the system prompt, as a first try does):
`printf 'ls -la\\ncat README.md\\n' > actions.txt`, `awl models add gemma-3-270m FILE` (the
Gemma 3 270M Q4_K_M file of the test extra, bench_models.gemma_model), then the command. In
the same run, for comparison:

* the command with `--speculate off` (no drafting);
* the same two turns in-process through the World API, as the TUI drives them (engine/loading's
  load_backend as a face loads the model, the session settings `awl run` resolves);
* llama-cpp-python's own `Llama.create_chat_completion(stream=True)` on the in-process turns'
  messages (the same prompts), its default threads, awl's context size, flash attention and full
  sliding-window cache, the same sampling (temperature 0.6, top-p 0.95, top-k 20, seed 0).

Per turn: wall seconds (the turn record's total: prompt and generation), prompt tokens
evaluated and their seconds, tokens generated, tokens/s while generating and over the whole
turn, drafted/accepted (from the session file's records). Per side: the command's wall time,
model load and session start included. The machine's load average is printed before and after:
compare the sides of one run, not numbers of runs on differently loaded machines.

    .venv/bin/python bench/first_live_try.py [--repeats N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_models import gemma_model, repacking_as_awl, table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
AWL = str(Path(sys.executable).with_name("awl"))
ACTIONS = ["ls -la", "cat README.md"]  # what `printf 'ls -la\ncat README.md\n' > actions.txt` writes
COMMAND = ["run", "actions.txt", "--model", "gemma-3-270m", "--think", "off", "--max-tokens", "128"]
MAX_TOKENS = 128


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "AWL_HOME": str(home), "NO_COLOR": "1", "TERM": "dumb"}


def awl_run(gemma: Path, extra: list[str]) -> dict[str, object]:
    """The README's commands in a new AWL_HOME; the session file's turns and the command's wall time."""
    with tempfile.TemporaryDirectory(prefix="awl-first-try-") as tmp:
        home = Path(tmp)
        (home / "actions.txt").write_text("".join(f"{action}\n" for action in ACTIONS))
        subprocess.run([AWL, "models", "add", "gemma-3-270m", str(gemma)], cwd=home, env=_env(home), check=True,
                       capture_output=True)
        started = time.perf_counter()
        done = subprocess.run([AWL, *COMMAND, *extra], cwd=home, env=_env(home), capture_output=True, text=True)
        wall = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"awl {' '.join(COMMAND + extra)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
        sessions = sorted((home / "data" / "sessions").glob("*.jsonl"))
        records = [json.loads(line) for line in sessions[-1].read_text().splitlines() if line.strip()]
    header = records[0]
    turns = [_turn(r["tokens"], r["timings"]) for r in records if r.get("type") == "turn"]
    return {"wall_s": wall, "turns": turns, "n_ctx": header["model"]["n_ctx"],
            "flash_attention": header["model"].get("flash_attention"),
            "summary": [line.strip() for line in (done.stdout + done.stderr).splitlines() if "tokens evaluated" in line]}


def _turn(tokens: dict, timings: dict, wall: float | None = None) -> dict[str, object]:
    return {"wall_s": timings["total_s"] if wall is None else wall, "prompt_evaluated": tokens["prompt_evaluated"],
            "prompt_total": tokens["prompt_total"], "prompt_s": timings["prompt_s"], "generated": tokens["generated"],
            "generate_s": timings["generate_s"], "drafted": tokens.get("drafted"), "accepted": tokens.get("accepted")}


def in_process() -> tuple[dict[str, object], list[list[dict[str, str]]]]:
    """The two turns through the World API in this process (a face's load, `awl run`'s settings);
    and each turn's messages, for the baseline. Call with AWL_HOME set to a new directory."""
    from agentworld_local.engine.loading import load_backend
    from agentworld_local.engine.world import World
    from agentworld_local.session.spec import SessionSpec

    started = time.perf_counter()
    backend = load_backend("gemma-3-270m", parallel=1)
    load_s = time.perf_counter() - started
    try:
        resolved = SessionSpec(max_tokens=MAX_TOKENS, think="off").resolve()
        world = World(backend, resolved.domain, resolved.settings)
        turns, messages = [], []
        for action in ACTIONS:
            messages.append(world.messages_for(world.turn_prompt(world._typed(action))))
            began = time.perf_counter()
            record = world.run_turn(action)
            turns.append(_turn(record.tokens, record.timings, time.perf_counter() - began))
        info = backend.info
    finally:
        backend.close()
    return {"wall_s": time.perf_counter() - started, "load_s": load_s, "turns": turns, "n_ctx": info.n_ctx,
            "flash_attention": info.flash_attention}, messages


def chat_completion(gemma: Path, conversations: list[list[dict[str, str]]], n_ctx: int, flash_attn: bool) -> dict[str, object]:
    """llama-cpp-python's own chat completion, streamed, on the same messages, one Llama for both turns
    (its prefix cache keeps what the turns share)."""
    from llama_cpp import Llama

    started = time.perf_counter()
    with repacking_as_awl():
        llm = Llama(model_path=str(gemma), n_ctx=n_ctx, n_gpu_layers=0, flash_attn=flash_attn, swa_full=True,
                    verbose=False, seed=0)
    load_s = time.perf_counter() - started
    turns = []
    tokenized: list[list[int]] = []  # what the call tokenizes: its prompt is the longest
    tokenize = llm.tokenize
    llm.tokenize = lambda *args, **kwargs: tokenized.append(tokenize(*args, **kwargs)) or tokenized[-1]
    try:
        for messages in conversations:
            before = [int(t) for t in llm._input_ids]
            tokenized.clear()
            began = time.perf_counter()
            first = None
            for chunk in llm.create_chat_completion(messages=messages, max_tokens=MAX_TOKENS, temperature=0.6, top_p=0.95,
                                                    top_k=20, min_p=0.0, seed=0, stream=True):
                if first is None and chunk["choices"][0]["delta"].get("content"):
                    first = time.perf_counter()
            ended = time.perf_counter()
            prompt = max(tokenized, key=len)
            # The context holds the prompt and every generated token but the last (sampled, never evaluated).
            generated = llm.n_tokens - len(prompt) + 1
            shared = next((i for i, (a, b) in enumerate(zip(before, prompt)) if a != b), min(len(before), len(prompt)))
            first = first or ended
            turns.append({"wall_s": ended - began, "prompt_evaluated": len(prompt) - shared,
                          "prompt_total": len(prompt), "prompt_s": first - began, "generated": generated,
                          "generate_s": ended - first, "drafted": None, "accepted": None})
    finally:
        llm.close()
    return {"wall_s": time.perf_counter() - started, "load_s": load_s, "turns": turns}


def measure(repeats: int) -> dict[str, object]:
    gemma = gemma_model()
    if gemma is None:
        raise SystemExit("Gemma 3 270M is not installed: pip install -e '.[test]'")
    runs: dict[str, list[dict[str, object]]] = {}
    load_before = os.getloadavg()
    for _ in range(repeats):
        runs.setdefault("awl run (README)", []).append(awl_run(gemma, []))
        runs.setdefault("awl run --speculate off", []).append(awl_run(gemma, ["--speculate", "off"]))
        home = tempfile.mkdtemp(prefix="awl-first-try-")
        old = os.environ.get("AWL_HOME")
        os.environ["AWL_HOME"] = home
        try:
            subprocess.run([AWL, "models", "add", "gemma-3-270m", str(gemma)], env=_env(Path(home)), check=True,
                           capture_output=True)
            inproc, conversations = in_process()
        finally:
            if old is None:
                os.environ.pop("AWL_HOME", None)
            else:
                os.environ["AWL_HOME"] = old
            shutil.rmtree(home, ignore_errors=True)
        runs.setdefault("World API in-process (the TUI's path)", []).append(inproc)
        runs.setdefault("llama-cpp-python create_chat_completion", []).append(
            chat_completion(gemma, conversations, int(inproc["n_ctx"]), bool(inproc["flash_attention"])))
    return {"machine": _machine(), "load_before": load_before, "load_after": os.getloadavg(), "runs": runs}


def _machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} CPUs ({model}), {platform.system()}"


def report(result: dict[str, object]) -> str:
    rows = []
    for side, runs in result["runs"].items():
        for number, run in enumerate(runs, 1):
            load = f", load {run['load_s']:.1f}" if "load_s" in run else ""
            for turn_number, turn in enumerate(run["turns"], 1):
                drafts = "" if turn["drafted"] is None else f"{turn['drafted']}/{turn['accepted']}"
                rows.append([side if turn_number == 1 else "", f"{number}.{turn_number}", f"{turn['wall_s']:.1f}",
                             f"{turn['prompt_evaluated']}/{turn['prompt_total']}", f"{turn['prompt_s']:.1f}",
                             turn["generated"], f"{turn['generate_s']:.1f}",
                             f"{turn['generated'] / turn['generate_s']:.1f}" if turn["generate_s"] else "-",
                             f"{turn['generated'] / turn['wall_s']:.1f}", drafts])
            rows.append(["", f"{number}: command", f"{run['wall_s']:.1f}{load}", "", "", "", "", "", "", ""])
    before, after = result["load_before"], result["load_after"]
    lines = [
        f"Machine: {result['machine']}; load average {before[0]:.2f} {before[1]:.2f} {before[2]:.2f} before, "
        f"{after[0]:.2f} {after[1]:.2f} {after[2]:.2f} after.",
        "Command: " + " ".join(["awl", *COMMAND]) + " (each side in a new AWL_HOME).",
        "",
        table(["side", "run.turn", "wall s", "prompt evaluated/total", "prompt s", "generated", "generate s",
               "tok/s generating", "tok/s over the turn", "drafted/accepted"], rows),
    ]
    for run in result["runs"].get("awl run (README)", []):
        lines += ["", "awl run printed:", *(f"    {line}" for line in run["summary"])]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1, help="rounds of all four sides, alternating")
    parser.add_argument("--json", action="store_true", help="print the measurements as JSON")
    args = parser.parse_args()
    result = measure(args.repeats)
    print(json.dumps(result, indent=1) if args.json else report(result))


if __name__ == "__main__":
    main()
