"""A context that never dead-ends (scripted answers): the session keeps system prompt, turn 1
and the recent turns, says so, records it, and resumes with the same view."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from agentworld_local.domains import get_domain
from agentworld_local.engine.context_window import KEEP_SHARE, SLACK, answer_room, prompt_room
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.world import World
from agentworld_local.engine.events import ContextTrimmed, TurnFinished
from agentworld_local.errors import AwlError
from agentworld_local.session.core import Session
from agentworld_local.engine.scripted import ScriptedAnswer, ScriptedBackend
from agentworld_local.trajectory.reader import read_trajectory
from agentworld_local.cli.replay_plain import replay
from agentworld_local.trajectory.schema import Header, TurnRecord
from agentworld_local.trajectory.writer import TrajectoryWriter

N_CTX = 2048
SCREEN = "\n".join(f"-rw-r--r-- 1 user user {n:5d} Dec  2 17:45 file_{n}.txt" for n in range(8))
RAW = f"<think>\nlist the files\n</think>\n<predicted_observation>\n{SCREEN}\n</predicted_observation>"


def make_world(n_ctx: int = N_CTX, *, task: str = "find the big file", saved: list | None = None) -> World:
    backend = ScriptedBackend([ScriptedAnswer(RAW, chunk=16)], n_ctx=n_ctx)
    settings = SessionSettings(
        sampling=SamplingConfig(max_tokens=128), think=ThinkBudget.parse("32"), task=task,
        system_prompt="You simulate a Linux terminal. Answer with the screen.",
    )
    return World(backend, get_domain("terminal"), settings, on_turn=None if saved is None else saved.append)


def play(world: World, turns: int) -> list[list[object]]:
    """Each turn's events (deltas left out)."""
    out = []
    for number in range(turns):
        out.append([e for e in world.step(f"cat file_{number}.txt") if isinstance(e, (ContextTrimmed, TurnFinished))])
    return out


def test_a_long_session_in_a_small_context_keeps_going_and_says_what_it_left_out():
    saved: list[TurnRecord] = []
    world = make_world(saved=saved)
    turns = play(world, 60)  # far more than fits: about 150 tokens a turn in 2,048
    assert len(world.history) == 60 and all(isinstance(events[-1], TurnFinished) for events in turns)
    cuts = [(number, events[0]) for number, events in enumerate(turns, start=1) if isinstance(events[0], ContextTrimmed)]
    assert len(cuts) >= 2, "the session must have outgrown the context more than once"
    # Cuts are rare: each frees a good share, so several turns pass between two cuts.
    gaps = [b - a for (a, _), (b, _) in zip(cuts, cuts[1:])]
    assert min(gaps) >= 4, gaps
    room = prompt_room(world.settings.sampling, world.settings.think, N_CTX)
    for number, cut in cuts:
        assert cut.turn == number and cut.first == 2 and cut.n_ctx == N_CTX
        assert cut.tokens_before > room >= room // KEEP_SHARE >= cut.tokens_after
        record = saved[number - 1]
        assert record.context == {
            "omitted_turns": {"first": 2, "last": cut.last},
            "cut": {"tokens_before": cut.tokens_before, "tokens_after": cut.tokens_after, "context": N_CTX},
        }
    # Every turn after the first cut names what its model did not see; the view only widens
    # between cuts (no turn comes back into view).
    first_cut = cuts[0][0]
    assert all(r.context is None for r in saved[: first_cut - 1])
    lasts = [r.context["omitted_turns"]["last"] for r in saved[first_cut - 1 :]]
    assert lasts == sorted(lasts)
    assert all(r.tokens["prompt_total"] + SLACK <= N_CTX for r in saved)


def test_the_model_gets_exactly_system_turn_one_and_the_recent_turns():
    world = make_world()
    play(world, 40)
    sent = world.backend.last_messages
    omitted = world.history[-1].context["omitted_turns"]
    kept = [world.history[0], *world.history[omitted["last"] : -1]]
    expected = [{"role": "system", "content": world.system_prompt()}]
    for record in kept:
        expected += [
            {"role": "user", "content": record.prompt},
            {"role": "assistant", "content": f"**Environment Observation:**\n{record.observation}"},
        ]
    expected.append({"role": "user", "content": world.history[-1].prompt})
    assert sent == expected
    # Turn 1 carries the task and the initial state; both stay in view.
    assert "find the big file" in sent[1]["content"] and "**Current State:**" in sent[1]["content"]
    assert omitted["last"] >= 2 and kept[1].turn == omitted["last"] + 1


def test_a_cut_costs_one_re_evaluation_then_turns_are_incremental_again():
    world = make_world()
    turns = play(world, 40)
    cut_turn = next(n for n, events in enumerate(turns, start=1) if isinstance(events[0], ContextTrimmed))
    at_cut, after = world.history[cut_turn - 1].tokens, world.history[cut_turn].tokens
    # The cut re-reads the kept history (all but the system prompt and turn 1's prompt) ...
    assert at_cut["prompt_evaluated"] > after["prompt_evaluated"] * 3
    # ... and the next turn evaluates only its new messages: the last observation and the action.
    new = [{"role": "assistant", "content": f"**Environment Observation:**\n{world.history[cut_turn - 1].observation}"},
           {"role": "user", "content": world.history[cut_turn].prompt}]
    assert after["prompt_evaluated"] == world.backend.count_tokens(new, world.settings.think)


def test_undo_fork_and_resume_continue_with_the_view_the_model_had():
    saved: list[TurnRecord] = []
    world = make_world(saved=saved)
    play(world, 30)
    last = world.history[-1].context["omitted_turns"]["last"]
    # A file read back (JSON round trip) gives the same window to a new World (resume).
    records = [TurnRecord.from_dict(json.loads(json.dumps(r.to_dict()))) for r in saved]
    resumed = World(world.backend, world.domain, world.settings, history=records)
    assert resumed.kept_from == world.kept_from == last + 1
    prompt = "### Turn 31\n\n**Action:**\nls"
    assert resumed.messages_for(prompt) == world.messages_for(prompt)
    # Undo back before the first cut: the full view returns with the turns it had.
    first_cut = next(n for n, r in enumerate(saved, start=1) if r.context)
    world.undo(to_turn=first_cut - 1)
    assert world.kept_from == 2
    assert len(world.messages_for(prompt)) == 1 + 2 * (first_cut - 1) + 1
    fork = resumed.fork(25)
    assert fork.kept_from == kept_from_of(saved[24])


def kept_from_of(record: TurnRecord) -> int:
    return record.context["omitted_turns"]["last"] + 1 if record.context else 2


def test_when_even_turn_one_and_the_current_turn_do_not_fit_the_error_stays():
    world = make_world(n_ctx=512, task="check the files " * 120)  # turn 1 alone is too big
    with pytest.raises(AwlError, match="context holds 512") as raised:
        world.run_turn("ls")
    assert "--ctx" in raised.value.hint
    assert world.history == []


def test_answer_room_is_the_budget_plus_max_tokens_capped_at_a_quarter():
    sampling = SamplingConfig(max_tokens=100)
    assert answer_room(sampling, ThinkBudget.parse("50"), 4096) == 150
    assert answer_room(sampling, ThinkBudget.parse("off"), 4096) == 100
    assert answer_room(sampling, ThinkBudget.parse("full"), 4096) == 1024
    assert answer_room(SamplingConfig(max_tokens=30000), ThinkBudget.parse("off"), 4096) == 1024


def test_older_records_without_context_and_damaged_notes_read_as_nothing_omitted():
    plain = TurnRecord.from_dict({"type": "turn", "id": 1, "turn": 1, "action": "ls"})
    assert plain.context is None and "context" not in plain.to_dict()
    world = make_world()
    world.history = [plain, TurnRecord(action="pwd", turn=2, context={"omitted_turns": "garbage"})]
    assert world.kept_from == 2
    with pytest.raises(ValueError, match="context"):
        TurnRecord.from_dict({"type": "turn", "id": 1, "turn": 1, "action": "ls", "context": [1, 2]})


def test_a_saved_session_with_cuts_reads_back_replays_and_resumes_with_the_same_view(tmp_path):
    path = tmp_path / "long.jsonl"
    with TrajectoryWriter.create(path, Header(domain="terminal")) as writer:
        world = make_world()
        world.on_turn = writer.append
        play(world, 30)
    traj = read_trajectory(path)
    assert [r.context for r in traj.current_branch()] == [r.context for r in world.history]
    console = Console(file=io.StringIO(), width=100)
    replay(traj, console, plain=True)
    assert "cat file_29.txt" in console.file.getvalue()
    resumed = World(make_world().backend, world.domain, world.settings, history=traj.current_branch())
    prompt = "### Turn 31\n\n**Action:**\nls"
    assert resumed.kept_from == world.kept_from > 2
    assert resumed.messages_for(prompt) == world.messages_for(prompt)


def test_a_resumed_session_shows_the_model_the_view_it_had_and_records_it(tmp_path):
    path = tmp_path / "long.jsonl"
    world = make_world()
    session = Session.create(world, path)
    for number in range(30):
        list(session.step(f"cat file_{number}.txt"))
    session.close()
    view = world.history[-1].context["omitted_turns"]
    twin = make_world()  # what the model would have been sent had the session gone on
    twin.history = list(world.history)
    expected = twin.messages_for(twin.turn_prompt(twin.domain.parse_action("ls")))
    backend = ScriptedBackend([ScriptedAnswer(RAW, chunk=16)], n_ctx=N_CTX)
    resumed = Session.resume(path, backend)
    list(resumed.step("ls"))
    resumed.close()
    assert backend.last_messages == expected
    record = read_trajectory(path).current_branch()[-1]
    assert record.turn == 31 and record.context["omitted_turns"] == view
