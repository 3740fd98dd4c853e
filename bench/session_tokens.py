"""A hybrid session's prompt tokens against llama-server's, and its CPU against an ideal loop's.

One run on a hybrid fixture (recurrent + attention layers: a state is set back only from a
copy): a terminal session of TURNS actions (a short system prompt, `--think off`, greedy,
MAX_TOKENS a turn, n_ctx 16,384: no context cut, n_batch 512), each through `World.step` as every face drives it.

* awl, no prefetch (RL: the next action comes at once) and awl with each turn's known start
  prefetched between turns (the runner's idle work while a person types): the prompt tokens
  each evaluated (prefetch included), whether both gave the same answers, and the process CPU
  seconds of each whole session (one thread: with several, llama.cpp's threads spin between
  decodes, and on a busy machine that spin is most of what CPU time measures).
* llama-server (`--llama-server PATH` or AWL_LLAMA_SERVER), one slot, its prompt cache and
  context checkpoints as it ships: the same conversation, each turn's prompt as awl's token
  ids, as many tokens generated as awl did; its `timings.prompt_n` per turn. Then an undo to
  turn 10 (turn 11's prompt again) on both sides.
* The ideal loop: on awl's context, cleared, llama.cpp alone: each turn's tokens that the
  context does not hold in one decode per n_batch chunk, split once where the next turn's
  prompt parts from this one (a recurrent state can only be set back to where a decode ended:
  a copy is taken there; it knows every later prompt), then awl's answer tokens one at a time
  (greedy sample, decode, detokenize); back to that copy before the next turn. No Python of
  its own beyond that.

Targets (issue 43): awl's tokens at most 1.05x llama-server's, awl's CPU at most 1.1x the
ideal loop's. Each side runs on a context of its own and the sides take turns a turn at a time
(the order reversed every other turn), so a busy neighbour weighs on each alike.

    .venv/bin/python bench/session_tokens.py [--quick] [--llama-server PATH]
"""

from __future__ import annotations

import codecs
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import llama_cpp  # noqa: E402 - the ideal loop is llama.cpp's own calls

from bench_models import LABELS, evaluated, model, table  # noqa: E402
from llama_server_binary import LlamaServer, binary_from_args, print_section_with_server  # noqa: E402
from session_loop import ACTIONS  # noqa: E402

from agentworld_local.domains import get_domain  # noqa: E402
from agentworld_local.engine import events  # noqa: E402
from agentworld_local.engine.llama import LlamaBackend, checkpoints  # noqa: E402
from agentworld_local.engine.llama.prefix_tokens import shared_length  # noqa: E402
from agentworld_local.engine.settings import SessionSettings  # noqa: E402
from agentworld_local.engine.types import SamplingConfig, ThinkBudget  # noqa: E402
from agentworld_local.engine.world import World  # noqa: E402
from agentworld_local.models.offload_options import OffloadOptions  # noqa: E402

N_CTX, N_BATCH, UNDO_TO = 16384, 512, 10
#: One thread on every side: process CPU time is then the work done (with several, llama.cpp's
#: threads spin between decodes, more so on a busy machine: CPU seconds that measure the load).
THREADS = 1
TOKEN_TARGET, CPU_TARGET = 1.05, 1.1


def settings(max_tokens: int) -> SessionSettings:
    return SessionSettings(sampling=SamplingConfig(temperature=0, max_tokens=max_tokens),
                           think=ThinkBudget.parse("off"), seed=1, system_prompt="You simulate a Linux terminal.",
                           task="find why the build fails")


class AwlSide:
    """awl's session on a backend of its own, a turn at a time: each turn's prompt tokens
    evaluated (its prefetch included), prompt and answer ids, raw answer and known start."""

    def __init__(self, backend: LlamaBackend, max_tokens: int, prefetch: bool) -> None:
        backend.reset()
        self.backend, self.prefetch, self.cpu = backend, prefetch, 0.0
        self.world = World(backend, get_domain("terminal"), settings(max_tokens))
        self.turns: list[dict] = []

    def step(self, number: int) -> dict:
        backend, world = self.backend, self.world
        cpu_started = time.process_time()
        # The session's own place, as the runner prefetches (the backend's own would be another owner's).
        before = world.backend.prefetch(world.next_turn_prefix()) if self.prefetch else 0
        for event in world.step(ACTIONS[number % len(ACTIONS)]):
            if isinstance(event, events.TurnFinished):
                record = event.record
        self.cpu += time.process_time() - cpu_started
        held, total = evaluated(backend), record.tokens["prompt_total"]
        known = [c.n_tokens for c in backend.sequence.checkpoints if c.known]  # this turn's known start
        self.turns.append({"evaluated": before + record.tokens["prompt_evaluated"], "prompt": held[:total],
                           "answer": held[total:], "raw": record.raw_output, "known": known[-1] if known else 0})
        return self.turns[-1]

    def undo(self) -> dict | None:
        """An undo to turn UNDO_TO and turn UNDO_TO + 1's action again."""
        if len(self.turns) <= UNDO_TO:
            return None
        self.world.undo(to_turn=UNDO_TO)
        again = self.world.run_turn(ACTIONS[UNDO_TO % len(ACTIONS)])
        return {"evaluated": again.tokens["prompt_evaluated"], "same": again.raw_output == self.turns[UNDO_TO]["raw"]}


class IdealSide:
    """The ideal loop (see the module's doc) on a context of its own, a turn at a time, told
    where the next turn's prompt parts from this one (an oracle). `known_split`: its prompts
    also stop at each turn's known start, as awl's do (what that split costs, apart from the
    rest of awl's work)."""

    def __init__(self, backend: LlamaBackend, known_split: bool = False) -> None:
        backend.reset()
        self.ctx, self.llm, self.n_batch = backend._llm.ctx, backend._llm, backend.n_batch
        self.memory = llama_cpp.llama_get_memory(self.ctx)
        llama_cpp.llama_memory_clear(self.memory, True)
        self.sampler = llama_cpp.llama_sampler_init_greedy()
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.known_split, self.cpu, self.same, self.text = known_split, 0.0, True, []
        self.held, self.saved, self.last = 0, {}, None  # tokens held; position -> state; last context

    def _decode(self, tokens: list[int]) -> None:
        """After what the context holds (positions follow it), logits at the last token."""
        for start in range(0, len(tokens), self.n_batch):
            chunk = tokens[start : start + self.n_batch]
            array = (llama_cpp.llama_token * len(chunk))(*chunk)
            if llama_cpp.llama_decode(self.ctx, llama_cpp.llama_batch_get_one(array, len(chunk))) != 0:
                raise RuntimeError("llama_decode failed")

    def turn(self, turn: dict, following: list[int] | None) -> None:
        """`turn` (awl's prompt and answer ids); `following`: the next turn's prompt, if any."""
        prompt, ctx = turn["prompt"], self.ctx
        cpu_started = time.process_time()
        if self.last is not None:  # back to where this prompt parts from the context
            parting = shared_length(self.last, prompt)
            back = max((at for at in self.saved if at <= parting), default=0)
            if back:
                checkpoints.set_state(ctx, self.saved[back], 0)
                llama_cpp.llama_memory_seq_rm(self.memory, 0, back, -1)
            else:
                llama_cpp.llama_memory_clear(self.memory, True)
            self.held = back
        stops = {shared_length(prompt, following) if following is not None else 0,
                 turn["known"] if self.known_split else 0}
        for at in sorted(at for at in stops if self.held < at < len(prompt)):
            self._decode(prompt[self.held : at])  # a decode ends where the next prompt parts: its state kept
            self.saved[at], self.held = checkpoints.copy_state(ctx, 0), at
        self._decode(prompt[self.held :])
        for token in turn["answer"]:
            picked = llama_cpp.llama_sampler_sample(self.sampler, ctx, -1)
            self.same = self.same and picked == token
            self.text.append(self.decoder.decode(self.llm.detokenize([token], special=True)))
            self._decode([token])
        self.cpu += time.process_time() - cpu_started
        self.held, self.last = len(prompt) + len(turn["answer"]), prompt + turn["answer"]

    def close(self) -> None:
        llama_cpp.llama_sampler_free(self.sampler)
        llama_cpp.llama_memory_clear(self.memory, True)


def session(backends: list[LlamaBackend], turns: int, max_tokens: int) -> dict:
    """One session on every side, a turn at a time in turn (the ideal loops two turns behind
    awl: they are told the next prompt), the order of the sides reversed every other turn, so
    a busy neighbour weighs on each alike."""
    plain, prefetched = AwlSide(backends[0], max_tokens, False), AwlSide(backends[1], max_tokens, True)
    ideal, split = IdealSide(backends[2]), IdealSide(backends[3], known_split=True)
    try:
        for number in range(turns + 2):
            sides = []
            if number < turns:
                sides += [lambda: plain.step(number), lambda: prefetched.step(number)]
            if number >= 2:  # two turns behind: the prompt after the one it evaluates is known
                last = plain.turns[number - 2]
                following = plain.turns[number - 1]["prompt"] if number - 1 < turns else None
                sides += [lambda: ideal.turn(last, following), lambda: split.turn(last, following)]
            for side in sides if number % 2 else reversed(sides):
                side()
    finally:
        ideal.close()
        split.close()
    return {"plain": plain, "prefetched": prefetched, "ideal": ideal, "split": split,
            "undo": plain.undo(), "undo_prefetched": prefetched.undo()}


def server_session(binary: Path, path: Path, backend: LlamaBackend, turns: list[dict]) -> dict:
    """llama-server on the same conversation: its prompt_n per turn, then the undo."""
    threads = llama_cpp.llama_n_threads(backend._llm.ctx)
    threads_batch = llama_cpp.llama_n_threads_batch(backend._llm.ctx)
    from agentworld_local.engine.llama import loading

    extra = () if loading._extra_buffers_safe() else ("--no-repack",)
    counts = []
    with LlamaServer(binary, path, n_ctx=N_CTX, threads=threads, threads_batch=threads_batch, n_batch=N_BATCH,
                     n_ubatch=N_BATCH, extra=extra) as server:
        def ask(turn: dict) -> int:
            body = {"prompt": turn["prompt"], "n_predict": max(1, len(turn["answer"])), "temperature": 0,
                    "cache_prompt": True}
            answer, _ = server.completion(body)
            return answer["timings"]["prompt_n"]

        counts = [ask(turn) for turn in turns]
        undo = ask(turns[UNDO_TO]) if len(turns) > UNDO_TO else None
    return {"counts": counts, "undo": undo}


def measure(path: Path, turns: int, max_tokens: int, repeats: int, binary: Path | None) -> dict:
    backends = [LlamaBackend(path, n_ctx=N_CTX, n_batch=N_BATCH, gpu_layers=0, threads=THREADS,
                             notice=lambda text: None, offload=OffloadOptions(speculate="off")) for _ in range(4)]
    try:
        runs = [session(backends, turns, max_tokens) for _ in range(repeats)]
        last = runs[-1]["plain"].turns
        server = None
        if binary is not None:
            try:
                server = server_session(binary, path, backends[0], last)
            except (RuntimeError, OSError) as error:
                server = {"error": str(error).split(":")[0]}
    finally:
        for backend in backends:
            backend.close()
    cpu = {side: sum(run[side].cpu for run in runs) for side in ("plain", "prefetched", "ideal", "split")}
    answers = [t["raw"] for t in last]
    return {
        "plain": [t["evaluated"] for t in last], "prefetched": [t["evaluated"] for t in runs[-1]["prefetched"].turns],
        "prompts": [len(t["prompt"]) for t in last], "generated": sum(len(t["answer"]) for t in last),
        "same": all([t["raw"] for t in run[side].turns] == answers for run in runs for side in ("plain", "prefetched")),
        "undo": runs[-1]["undo"], "undo_prefetched": runs[-1]["undo_prefetched"], "server": server,
        **{f"cpu_{side}": seconds for side, seconds in cpu.items()},
        "ideal_same": all(run["ideal"].same for run in runs),
    }


def _ratio(one: float, two: float) -> str:
    return f"{one / two:.3f}x" if two else "n/a"


def section(quick: bool, binary: Path | None = None) -> str:
    binary = binary or binary_from_args()
    kinds, turns, answer_sizes, repeats = (["tiny"], 12, [16], 1) if quick else (["big"], 30, [48, 8], 3)
    load = os.getloadavg()
    token_rows, cpu_rows = [], []
    for kind in kinds:
        path = model(kind)
        if path is None:
            token_rows.append([LABELS[kind], "not installed"] + [""] * 6)
            continue
        for max_tokens in answer_sizes:
            r = measure(path, turns, max_tokens, repeats, binary)
            label = f"{LABELS[kind]}, {turns} turns of at most {max_tokens} tokens ({r['generated']:,} generated)"
            server = r["server"] or {"error": "not found"}
            awl_total, pre_total = sum(r["plain"]), sum(r["prefetched"])
            if "counts" in server:
                ls_total, ls_later = sum(server["counts"]), sum(server["counts"][1:])
                ls_cells = [f"{ls_total:,} ({ls_later:,})", _ratio(awl_total, ls_total), _ratio(pre_total, ls_total)]
                ls_undo = server["undo"]
            else:
                ls_cells, ls_undo = [f"llama-server {server['error']}", "", ""], "n/a"
            token_rows.append([label, f"{awl_total:,} ({sum(r['plain'][1:]):,})",
                               f"{pre_total:,} ({sum(r['prefetched'][1:]):,})",
                               *ls_cells, f"{r['prompts'][-1]:,}",
                               f"{r['undo']['evaluated'] if r['undo'] else 'n/a'} / {ls_undo}",
                               "yes" if r["same"] and (not r["undo"] or r["undo"]["same"]) else "NO"])
            cpu_rows.append([label, f"{r['cpu_plain']:.2f}", f"{r['cpu_prefetched']:.2f}", f"{r['cpu_ideal']:.2f}",
                             _ratio(r["cpu_plain"], r["cpu_ideal"]), _ratio(r["cpu_prefetched"], r["cpu_ideal"]),
                             f"{r['cpu_split']:.2f} ({_ratio(r['cpu_split'], r['cpu_ideal'])})",
                             _ratio(r["cpu_plain"], r["cpu_split"]), "yes" if r["ideal_same"] else "no"])
            print(f"{label}: awl per turn {r['plain']}; prefetched {r['prefetched']}; "
                  f"llama-server {server.get('counts')}", file=sys.stderr)
    return "\n\n".join([
        "## A hybrid session's prompt tokens and CPU: llama-server and an ideal loop",
        f"A terminal session on a hybrid fixture (a short system prompt, `--think off`, greedy, n_ctx {N_CTX:,}, "
        f"n_batch {N_BATCH}, {THREADS} thread on every side, `--speculate off`), each turn through `World.step`: "
        "with no prefetch between turns (RL: the next action comes at once) and with each turn's known start "
        "prefetched between turns. Prompt tokens evaluated over the "
        "session (turns 2 on in brackets; a prefetch counts with its turn) against llama-server (one slot, its prompt "
        "cache and context checkpoints as shipped) given the same conversation as awl's token ids; then an undo to "
        f"turn {UNDO_TO} and turn {UNDO_TO + 1} again on both. Target: awl / llama-server at most {TOKEN_TARGET}. "
        f"Load average at the start {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f} (token counts do not depend on it).",
        table(["session", "awl, no prefetch", "awl, prefetch", "llama-server", "awl / llama-server",
               "prefetch / llama-server", "context at the end", f"undo to turn {UNDO_TO}: awl / llama-server",
               "same answers (prefetch or not, undo)"], token_rows),
        f"The same sessions' process CPU seconds (summed over {repeats} sessions; each side on a context of its own, "
        "the sides taking turns a turn at a time, so a busy neighbour weighs on each alike) against an ideal "
        "loop on the same context: each turn's new tokens once, in one decode but for one split where the next "
        "turn's prompt parts (a recurrent state is set back only to where a decode ended), awl's answer tokens one "
        f"at a time (greedy sample, decode, detokenize), nothing else. Target: awl / ideal at most {CPU_TARGET}. "
        "awl's prompt also stops at each turn's known start (so that a prefetched turn answers alike: the design "
        "notes' decision): the ideal loop with that split too is beside it, and awl against it (the rest of awl's "
        "work: rendering, tokenizing, checkpoint copies, the answer rules, the events). The ideal loop samples "
        "greedily after other splits than awl's, so its picks may part from awl's answer where two logits nearly tie; "
        "it decodes awl's tokens all the same.",
        table(["session", "awl CPU s, no prefetch", "awl CPU s, prefetch", "ideal CPU s", "awl / ideal",
               "prefetch / ideal", "ideal with the known-start split CPU s", "awl / that",
               "ideal sampled awl's tokens"], cpu_rows),
    ])


def main() -> None:
    print_section_with_server(section, __doc__)


if __name__ == "__main__":
    main()
