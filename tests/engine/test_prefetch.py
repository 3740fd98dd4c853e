"""Prefetch between turns (issue 17): the next turn's known start is evaluated while the user
types, so a turn evaluates only its action's tokens and what follows them. On the real
llama.cpp path with the generated fixtures; the races run many times through the runner.
"""

from __future__ import annotations

import os

import random
import threading
import time

import pytest

from agentworld_local.domains import get_domain
from agentworld_local.engine import events as ev
from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.engine.world import World
from agentworld_local.models.offload_options import OffloadOptions
from agentworld_local.session.runner import NewSession, SessionRunner
from agentworld_local.testing import EventLog
from agentworld_local.session.spec import SessionSpec
from tests.cli.helpers import awl, scripted_model

ACTIONS = ["ls -la", "cd src", "cat main.py", "python main.py", "git status", "pwd"]


def settings(temperature: float, seed: int = 4) -> SessionSettings:
    # A short system prompt keeps these fast; the long one is prefetched in the runner's tests.
    return SessionSettings(sampling=SamplingConfig(temperature=temperature, max_tokens=12),
                           think=ThinkBudget.parse("4"), seed=seed, system_prompt="You simulate a Linux terminal.",
                           task="find why the build fails")


def load(path, n_batch: int = 64) -> LlamaBackend:
    backend = LlamaBackend(path, n_ctx=8192, gpu_layers=0, threads=1, notice=lambda text: None)
    backend.n_batch = n_batch  # many chunks, so where a prefetch stops matters
    return backend


class CancelAfter:
    """A cancel flag that reads set after `checks` reads: a prefetch stopped between chunks."""

    def __init__(self, checks: int) -> None:
        self.checks = checks

    def is_set(self) -> bool:
        self.checks -= 1
        return self.checks < 0


def play(backend: LlamaBackend, world_settings: SessionSettings, prefetch: str) -> list[tuple[str, dict]]:
    """Four turns; before each, the known start prefetched whole, in part, or not at all."""
    backend.reset()
    world = World(backend, get_domain("terminal"), world_settings)
    turns = []
    for number, action in enumerate(ACTIONS[:4]):
        if prefetch == "whole":
            assert backend.prefetch(world.next_turn_prefix()) > 0
        elif prefetch == "part":
            backend.prefetch(world.next_turn_prefix(), cancel=CancelAfter(number % 3))
        record = world.run_turn(action)
        turns.append((record.raw_output, record.tokens))
    return turns


def test_after_a_prefetch_a_turn_evaluates_only_its_action_and_what_follows_it(qwen_gguf):
    backend = load(qwen_gguf, n_batch=512)
    try:
        without = play(backend, settings(0.8), "none")
        backend.reset()
        world = World(backend, get_domain("terminal"), settings(0.8))
        for number, action in enumerate(ACTIONS[:4]):
            start = world.turn_start()
            known = backend.prefetch(world.next_turn_prefix())
            prefetched = backend.evaluated_tokens
            assert backend._llm.detokenize(prefetched).decode().endswith(start)
            record = world.run_turn(action)
            total, evaluated = record.tokens["prompt_total"], record.tokens["prompt_evaluated"]
            # The turn went on from where the prefetch stopped, and evaluated the rest alone.
            assert total - evaluated == len(prefetched)
            rest = backend._llm.detokenize(backend.evaluated_tokens[len(prefetched):total]).decode()
            # The wrapper every typed action gets (the keystrokes JSON up to the keys) was known.
            wrapper = os.path.commonprefix([world.domain.parse_action(text).prompt_text for text in ("A", "B")])
            assert wrapper.startswith("```json") and start.endswith(wrapper)
            assert rest.startswith(world.domain.parse_action(action).prompt_text[len(wrapper):]) and start not in rest
            # Without the prefetch the turn evaluated both parts itself (in the same chunks).
            assert without[number][1]["prompt_evaluated"] == known + evaluated
            assert without[number][0] == record.raw_output
            assert known > 0  # turn 1's start holds the system prompt, later ones the last answer
    finally:
        backend.close()


@pytest.mark.parametrize("fixture", ["qwen_gguf", "llama_gguf"])
@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_a_seeded_session_gives_the_same_answers_prefetched_whole_in_part_or_not(fixture, temperature, request):
    """A different batch split moves logits in their last bits on the CPU; every turn
    evaluates its known start in its own chunks, so where a prefetch stopped changes nothing."""
    backend = load(request.getfixturevalue(fixture))
    try:
        plain = [raw for raw, _ in play(backend, settings(temperature), "none")]
        assert [raw for raw, _ in play(backend, settings(temperature), "whole")] == plain
        assert [raw for raw, _ in play(backend, settings(temperature), "part")] == plain
    finally:
        backend.close()


# -- through the runner: between turns, cancelled by whatever comes --------------------------


def new_session(tmp_path, name: str, temperature: float = 0.8) -> NewSession:
    spec = SessionSpec(domain="terminal", think="4", temperature=temperature, max_tokens=12, seed=9)
    return NewSession.from_spec(spec.resolve(), tmp_path / name)


class Spy:
    """Records each prefetch the runner starts between turns: how much it evaluated, whether
    it was stopped before the end; `idle` is set when one returns."""

    def __init__(self, runner: SessionRunner, backend: LlamaBackend) -> None:
        self.runner, self.real, self.calls = runner, backend.prefetch, []
        self.idle = threading.Event()
        backend.prefetch = self

    def __call__(self, messages, *, cancel=None, **options) -> int:
        background = cancel is self.runner._order.idle_cancel
        evaluated = self.real(messages, cancel=cancel, **options)
        if background:
            self.calls.append((evaluated, cancel.is_set()))
            self.idle.set()
        return evaluated


def until_ready(log: EventLog) -> list:
    items = list(log.until_ready())
    bad = [event for _, event in items if isinstance(event, (ev.ErrorEvent, ev.Refused))]
    assert not bad, bad
    return items


def opened(log: EventLog, runner: SessionRunner, tmp_path, name: str) -> str:
    assert runner.open(new_session(tmp_path, name))
    return next(event.path for _, event in until_ready(log) if isinstance(event, ev.SessionOpened))


def scripted_rounds(seed: int, rounds: int) -> list[tuple[str, float]]:
    """The commands of a race: mostly actions, some undo, control, regenerate and fork, each
    after a random pause (the prefetch is then anywhere: not started, mid-way, done)."""
    rng = random.Random(seed)
    names = ["step"] * 6 + ["undo", "control", "regenerate", "fork"]
    return [(rng.choice(names), rng.choice([0.0, rng.uniform(0, 0.03), rng.uniform(0.05, 0.4)])) for _ in range(rounds)]


def drive(backend: LlamaBackend, tmp_path, plan: list[tuple[str, float]], tag: str,
          let_one_finish: int = 0) -> tuple[list[str], list]:
    """The plan through the runner. `let_one_finish`: after every that-many commands, once a step
    is done, wait until the prefetch it starts has run to its end (an event, not a pause), so that
    some prefetches surely finish on a loaded machine too, where a random pause may be too short."""
    log = EventLog()
    runner = SessionRunner(log, backend=backend)
    spy = Spy(runner, backend)
    observations = []
    try:
        sid, turns = opened(log, runner, tmp_path, f"{tag}.jsonl"), 0
        for number, (name, pause) in enumerate(plan):
            name = name if turns else "step"  # nothing to undo, regenerate or fork yet
            time.sleep(pause)
            before = len(spy.calls)
            if name == "fork":
                assert runner.fork(sid, turns - 1, tmp_path / f"{tag}-{number}.jsonl")
            elif name == "control":
                assert runner.control(sid, f"the disk is full ({number})")
            elif name in ("undo", "regenerate"):
                assert (runner.undo if name == "undo" else runner.regenerate)(sid)
            else:
                assert runner.step(sid, ACTIONS[number % len(ACTIONS)])
            for _, event in until_ready(log):
                if isinstance(event, ev.TurnFinished):
                    observations.append(event.record.raw_output)
                if isinstance(event, ev.SessionOpened):
                    sid = event.path
                if isinstance(event, ev.Ready):
                    turns = event.turns
            if let_one_finish and name == "step" and number % let_one_finish == 0:
                # Until a prefetch since this command ran to its end (the one it stopped did not).
                while not any(not stopped for _, stopped in spy.calls[before:]):  # pytest-timeout stops a hang
                    time.sleep(0.01)
    finally:
        runner.close()
    return observations, spy.calls


def test_commands_arriving_at_random_moments_stop_the_prefetch_and_the_answers_stay_the_same(qwen_gguf, tmp_path):
    plan = scripted_rounds(seed=17, rounds=30)
    reference = load(qwen_gguf, n_batch=16)
    reference.idle_prefetch = False
    expected, none = drive(reference, tmp_path / "off", plan, "off")
    assert none == [] and len(expected) >= 15
    raced, calls = drive(load(qwen_gguf, n_batch=16), tmp_path / "on", plan, "on", let_one_finish=5)
    assert raced == expected
    # The race really ran: prefetches finished, and commands stopped others mid-way.
    assert any(not stopped and evaluated > 0 for evaluated, stopped in calls)
    assert any(stopped for _, stopped in calls)


@pytest.mark.parametrize("command", ["close", "close_session", "load", "step"])
def test_a_command_during_a_long_prefetch_runs_at_once(qwen_gguf, llama_gguf, tmp_path, command):
    """After an open the known start is the whole system prompt: in 8-token chunks a long
    prefetch, which the next command stops at its next chunk."""
    backend = load(qwen_gguf, n_batch=8)
    log = EventLog()
    runner = SessionRunner(log, backend=backend)
    spy = Spy(runner, backend)
    try:
        sid = opened(log, runner, tmp_path, "s.jsonl")
        if command == "close":
            runner.close()
        elif command == "close_session":
            assert runner.close_session(sid)
            assert any(isinstance(event, ev.Discarded) for _, event in until_ready(log))
        elif command == "load":
            assert runner.load(str(llama_gguf))
            assert any(isinstance(event, ev.ModelLoaded) for _, event in until_ready(log))
            assert runner._backend is not backend and backend._freed
        else:
            assert runner.step(sid, "ls")
            record = next(e.record for _, e in until_ready(log) if isinstance(e, ev.TurnFinished))
            # The turn evaluated what the stopped prefetch had not: most of the system prompt.
            assert record.tokens["prompt_evaluated"] > record.tokens["prompt_total"] // 2
        assert spy.idle.wait()  # no deadline: pytest-timeout stops a hang
        [(evaluated, stopped)] = spy.calls[:1]
        assert stopped and evaluated < 3000
    finally:
        runner.close()


def test_a_prefetch_writes_nothing_to_the_session_file(qwen_gguf, tmp_path):
    backend = load(qwen_gguf, n_batch=512)
    log = EventLog()
    runner = SessionRunner(log, backend=backend)
    spy = Spy(runner, backend)
    try:
        sid = opened(log, runner, tmp_path, "s.jsonl")
        assert spy.idle.wait()
        spy.idle.clear()
        assert runner.step(sid, "ls -la")
        until_ready(log)
        path = tmp_path / "s.jsonl"
        before = (path.read_bytes(), path.stat().st_mtime_ns)
        assert spy.idle.wait()
        assert spy.calls[-1][0] > 0 and not spy.calls[-1][1]  # it ran to its end
        assert (path.read_bytes(), path.stat().st_mtime_ns) == before
        assert [p.name for p in tmp_path.iterdir()] == ["s.jsonl"]
    finally:
        runner.close()


def test_no_prefetch_turns_it_off(qwen_gguf, tmp_path):
    backend = LlamaBackend(qwen_gguf, n_ctx=8192, gpu_layers=0, threads=1, notice=lambda text: None,
                           offload=OffloadOptions.from_flags(prefetch=False))
    log = EventLog()
    runner = SessionRunner(log, backend=backend)
    spy = Spy(runner, backend)
    try:
        sid = opened(log, runner, tmp_path, "s.jsonl")
        assert runner.step(sid, "ls")
        until_ready(log)
        assert not spy.idle.wait(1.0) and spy.calls == []
    finally:
        runner.close()


def test_awl_run_takes_no_prefetch_with_any_model(tmp_path):
    """A model without prefetch (scripted, a server's) has nothing to turn off: no error."""
    model = scripted_model(tmp_path, "<observation>\nfile.txt\n</observation>")
    result = awl("run", "-m", model, "--no-prefetch", "-o", str(tmp_path / "s.jsonl"), "--json", home=tmp_path,
                 stdin="ls\n")
    assert result.returncode == 0, result.stderr
    assert "file.txt" in result.stdout


def test_a_turn_renders_and_tokenizes_each_text_once(qwen_gguf, monkeypatch):
    """Counting the prompt (the context window), prefetching its start and generating it read the
    same renders and tokens: no render is made twice in a turn, and only new text is tokenized
    (each a long history's cost otherwise)."""
    from collections import Counter

    from agentworld_local.engine.llama import vocab
    from agentworld_local.engine.template import ChatTemplate

    backend = load(qwen_gguf, n_batch=512)
    try:
        world = World(backend, get_domain("terminal"), settings(0.0))
        world.run_turn("cat " + " ".join(f"notes_{n}.txt" for n in range(400)))  # a long history
        tokenized: Counter[str] = Counter()
        rendered: Counter[str] = Counter()
        tokenize, render = vocab.tokenize, ChatTemplate._render

        def counted_tokenize(llm, text):
            tokenized[text] += 1
            return tokenize(llm, text)

        def counted_render(template, messages, *flags):
            rendered[repr((messages, flags))] += 1
            return render(template, messages, *flags)

        monkeypatch.setattr(vocab, "tokenize", counted_tokenize)
        monkeypatch.setattr(ChatTemplate, "_render", counted_render)
        for action in ACTIONS[1:3]:
            tokenized.clear()
            before_r = sum(rendered.values())
            record = world.run_turn(action)
            assert tokenized and sum(rendered.values()) > before_r
            # Only text after what the last turn's tokens hold is tokenized (prefix_tokens.py):
            # a few hundred characters of a prompt of thousands, never a whole history again.
            prompt = len(backend._llm.detokenize(backend.evaluated_tokens[: record.tokens["prompt_total"]]))
            assert 0 < sum(len(text) * n for text, n in tokenized.items()) < prompt // 4
            assert max(rendered.values()) == 1
    finally:
        backend.close()


@pytest.mark.parametrize("fixture", ["qwen_gguf", "llama_gguf"])
def test_a_prefetched_session_keeps_one_checkpoint_per_turn_and_undo_stays_cheap(fixture, request):
    """Issue 27: the known start's checkpoint goes once the next turn's is made (the budget
    holds twice the turns), and the newest one stays: undo, then another action, starts there."""
    backend = load(request.getfixturevalue(fixture), n_batch=512)
    try:
        backend.reset()
        world = World(backend, get_domain("terminal"), settings(0.0))
        counts = []
        for action in ACTIONS:
            assert backend.prefetch(world.next_turn_prefix()) > 0
            world.run_turn(action)
            kept = backend.sequence.checkpoints
            assert [c.known for c in kept].count(True) <= 1
            counts.append(len(kept))
        # Steady state: one more checkpoint per turn (two per turn before issue 27).
        assert [b - a for a, b in zip(counts[2:], counts[3:])] == [1] * (len(ACTIONS) - 3)
        world.undo()
        start = world.turn_start()
        known = backend.prefetch(world.next_turn_prefix())
        assert known == 0  # the last turn's known start is restored, not evaluated again
        record = world.run_turn("echo another action")
        restored = record.tokens["prompt_total"] - record.tokens["prompt_evaluated"]
        rest = backend._llm.detokenize(backend.evaluated_tokens[restored : record.tokens["prompt_total"]]).decode()
        # It went on from the known start (or past it, on an attention-only model, into the action).
        assert start.strip() not in rest and "echo another" in rest
        assert backend._llm.detokenize(backend.evaluated_tokens[:restored]).decode().endswith(start) or fixture == "llama_gguf"
    finally:
        backend.close()
