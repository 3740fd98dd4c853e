"""The runner with a backend that runs sessions side by side (a llama model with several
session slots): commands for different sessions run at once, a session's own commands keep
the one-at-a-time rules, `cancel(session)` stops that session's turn alone.

The race runs on scripted answers (each session its own realistic raw answer stream, as a
llama model's slots are) many times; one run goes through the real llama.cpp path with the
qwen35moe fixture and two slots.
"""

from __future__ import annotations

import queue
import random
import threading
from pathlib import Path

import pytest

from agentworld_local.engine import events as ev
from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.engine.scripted import ScriptedBackend
from agentworld_local.session.runner import NewSession, SessionRunner
from agentworld_local.session.spec import SessionSpec
from agentworld_local.testing.answers import ANSWERS
from agentworld_local.trajectory.reader import read_trajectory


class SideBySide:
    """Scripted answers with session slots: each session streams from its own script."""

    parallel = 8
    idle_prefetch = False

    def __init__(self, delay_s: float) -> None:
        self._delay_s = delay_s
        self.info = ScriptedBackend([ANSWERS[0].raw]).info

    def for_session(self) -> ScriptedBackend:
        return ScriptedBackend([answer.raw for answer in ANSWERS], delay_s=self._delay_s)

    def close(self) -> None:
        pass


class Mailboxes:
    """The runner's events sorted by session (what a server does with them)."""

    def __init__(self) -> None:
        self.boxes: dict[str | None, queue.SimpleQueue] = {}
        self.saved: dict[str | None, list[str]] = {}  # each session's saved turns' actions, as told
        self.everything: queue.SimpleQueue = queue.SimpleQueue()  # (session, event), in order
        self._lock = threading.Lock()

    def box(self, session: str | None) -> queue.SimpleQueue:
        with self._lock:
            return self.boxes.setdefault(session, queue.SimpleQueue())

    def __call__(self, session: str | None, event: ev.SessionEvent) -> None:
        if isinstance(event, ev.TurnFinished):
            with self._lock:
                self.saved.setdefault(session, []).append(event.record.action)
        self.box(session).put(event)
        self.everything.put((session, event))

    def command_done(self, command: str, timeout: float | None = None) -> list[tuple[str | None, ev.SessionEvent]]:
        """Every event up to the Ready or Refused of `command` (whichever session it is told to)."""
        got = []
        while not got or not (isinstance(got[-1][1], (ev.Ready, ev.Refused)) and got[-1][1].command == command):
            got.append(self.everything.get(timeout=timeout))
        return got

    def until_done(self, session: str | None, timeout: float | None = None) -> list[ev.SessionEvent]:
        """The events of one command of `session`, up to its Ready or Refused. No deadline unless
        a test gives one: a slow machine is not a failure, and pytest-timeout stops a hang."""
        got = []
        while not got or not isinstance(got[-1], (ev.Ready, ev.Refused)):
            got.append(self.box(session).get(timeout=timeout))
        return got


def opened_sid(mail: Mailboxes, path: Path) -> str:
    sid = str(path)
    events = mail.until_done(sid)
    assert isinstance(events[-1], ev.Ready) and any(isinstance(e, ev.SessionOpened) for e in events), events
    return sid


def settle(runner: SessionRunner, mail: Mailboxes) -> None:
    """Wait until nothing runs, then forget the events told so far (the saved actions stay)."""
    while runner.busy:
        threading.Event().wait(0.01)
    threading.Event().wait(0.05)  # a Ready comes just after its command leaves the pending list
    for box in [*mail.boxes.values(), mail.everything]:
        while not box.empty():
            box.get()


def play(runner: SessionRunner, mail: Mailboxes, sid: str, actions: list[str]) -> None:
    """Step through `actions`, each after the session's last command ended (or was refused)."""
    for action in actions:
        runner.step(sid, action)
        mail.until_done(sid)


def chaos(runner: SessionRunner, sids: list[str], rng: random.Random, stop: threading.Event) -> None:
    """Steps and cancels for random sessions at random moments: accepted or refused, each
    accepted one's turn must land in its own session's file, or be cancelled."""
    number = 0
    while not stop.is_set():
        stop.wait(rng.uniform(0, 0.01))
        sid = rng.choice(sids)
        if rng.random() < 0.5:
            runner.cancel(sid)
        else:
            number += 1
            runner.step(sid, f"echo {Path(sid).stem}-chaos{number}")


def test_sessions_step_side_by_side_with_cancels_and_closes_and_every_file_holds_its_own_turns(tmp_path):
    rng = random.Random(19)
    for round_number in range(6):
        folder = tmp_path / f"round{round_number}"
        folder.mkdir()
        mail = Mailboxes()
        runner = SessionRunner(mail, backend=SideBySide(delay_s=rng.choice([0.0, 0.0005, 0.002])))
        paths = [folder / f"s{i}.jsonl" for i in range(4)]
        sids = [str(path) for path in paths]
        try:
            for path in paths:
                assert runner.open(NewSession.from_spec(SessionSpec(domain="terminal", think="full").resolve(), path))
                opened_sid(mail, path)
            stop = threading.Event()
            threads = [threading.Thread(target=play, args=(runner, mail, sid, [f"echo {Path(sid).stem}-t{m}" for m in range(5)]))
                       for sid in sids]
            threads.append(threading.Thread(target=chaos, args=(runner, sids, random.Random(rng.random()), stop)))
            for thread in threads:
                thread.start()
            for thread in threads[:-1]:
                thread.join()
            stop.set()
            threads[-1].join()
            # One session closes and opens again in between; then each session takes one more turn.
            settle(runner, mail)
            closing = sids[rng.randrange(len(sids))]
            assert runner.close_session(closing)
            assert isinstance(mail.command_done("close_session")[-1][1], ev.Ready)
            again = "resume" if Path(closing).exists() else "open"
            if again == "resume":
                assert runner.resume(Path(closing))
            else:  # every turn of it was cancelled: the session left no file, and starts again
                assert runner.open(NewSession.from_spec(SessionSpec(domain="terminal", think="full").resolve(),
                                                        Path(closing)))
            told = mail.command_done(again)
            assert isinstance(told[-1][1], ev.Ready) and told[-1][0] == closing, told
            assert all(runner.step(sid, f"echo {Path(sid).stem}-last") for sid in sids)
            for _ in sids:
                assert isinstance(mail.command_done("step")[-1][1], ev.Ready)
        finally:
            runner.close()
        for sid in sids:
            saved = mail.saved.get(sid, [])
            assert [t.action for t in read_trajectory(Path(sid)).turns] == saved, f"round {round_number}: {sid}"
            assert saved[-1] == f"echo {Path(sid).stem}-last"
            assert all(action.startswith(f"echo {Path(sid).stem}-") for action in saved)


def test_a_cancel_of_one_session_leaves_the_other_running_and_its_own_commands_keep_the_rules(tmp_path):
    mail = Mailboxes()
    runner = SessionRunner(mail, backend=SideBySide(delay_s=0.01))
    try:
        first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
        for path in (first, second):
            runner.open(NewSession.from_spec(SessionSpec(domain="terminal", think="full").resolve(), path))
            opened_sid(mail, path)
        a, b = str(first), str(second)
        assert runner.step(a, "ls")
        assert runner.step(b, "pwd"), "another session's step runs beside"
        undo = runner.undo(a)
        assert undo, "a session's own command waits for its turn, in its mailbox"
        assert runner.cancel(a) == 2, "the running turn and the waiting undo"
        assert "Cancelled before it ran" in undo.wait().first(ev.Notice).text
        events_a, events_b = mail.until_done(a) + mail.until_done(a), mail.until_done(b)  # the undo's, the step's
        assert any(isinstance(e, ev.TurnCancelled) and e.by == "client" for e in events_a)
        assert any(isinstance(e, ev.TurnFinished) for e in events_b), "the other session's turn went on"
    finally:
        runner.close()
    assert [t.action for t in read_trajectory(second).turns] == ["pwd"]
    assert not first.exists(), "a session that never got a turn leaves no file"


def test_two_sessions_side_by_side_on_a_two_slot_model_save_what_each_saves_alone(tmp_path, qwen_gguf):
    def settings(seed: int) -> SessionSpec:
        return SessionSpec(domain="terminal", think="4", max_tokens=10, temperature=0.8, seed=seed)

    def run(backend, folder: Path, together: bool) -> dict[str, list[str]]:
        mail = Mailboxes()
        runner = SessionRunner(mail, backend=backend)
        paths = {seed: folder / f"s{seed}.jsonl" for seed in (3, 4)}
        try:
            for seed, path in paths.items():
                runner.open(NewSession.from_spec(settings(seed).resolve(), path))
                opened_sid(mail, path)
            for action in ("ls", "cat notes.txt"):
                sids = [str(path) for path in paths.values()]
                if together:
                    assert all(runner.step(sid, action) for sid in sids)
                    for sid in sids:
                        mail.until_done(sid)
                else:
                    for sid in sids:
                        assert runner.step(sid, action)
                        mail.until_done(sid)
        finally:
            runner.close()
        return {seed: [t.raw_output for t in read_trajectory(path).turns] for seed, path in paths.items()}

    (tmp_path / "alone").mkdir()
    (tmp_path / "together").mkdir()
    alone = run(LlamaBackend(qwen_gguf, n_ctx=8192, gpu_layers=0), tmp_path / "alone", together=False)
    together = run(LlamaBackend(qwen_gguf, n_ctx=8192, gpu_layers=0, parallel=2), tmp_path / "together", together=True)
    assert together == alone
    assert all(len(outputs) == 2 for outputs in together.values())


@pytest.fixture(autouse=True)
def _no_stray_threads():
    before = set(threading.enumerate())
    yield
    stray = [t for t in threading.enumerate() if t not in before and t.name.startswith("awl-turn")]
    assert not stray, stray
