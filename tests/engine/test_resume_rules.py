"""Resume rules in the core (session/resume_rules.py, Session.resume): the model a session
goes on with, and which settings may change, recorded on the turns they apply to."""

from __future__ import annotations

import pytest

from agentworld_local.domains import get_domain
from agentworld_local.engine.scripted import ScriptedBackend
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.engine.world import World
from agentworld_local.errors import InputError
from agentworld_local.session.core import Session, turn_seed
from agentworld_local.session.resume_rules import ResumeOptions, plan_resume
from agentworld_local.testing.answers import answer
from agentworld_local.trajectory.reader import read_trajectory

LS = answer("thinking_then_tags")
MADE_WITH = "a" * 64
OTHER = "b" * 64


class RecordingBackend(ScriptedBackend):
    """Scripted answers; remembers what every generation was asked with."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.asked: list[tuple[SamplingConfig, ThinkBudget, int]] = []

    def generate(self, messages, *, sampling, think, seed, **options):
        self.asked.append((sampling, think, seed))
        return super().generate(messages, sampling=sampling, think=think, seed=seed, **options)


def backend(sha256: str = MADE_WITH, name: str = "world.gguf") -> RecordingBackend:
    return RecordingBackend([LS.scripted()], name=name, path=f"/models/{name}", sha256=sha256)


def saved_session(path, turns=("ls", "pwd")) -> None:
    settings = SessionSettings(sampling=SamplingConfig(max_tokens=64, temperature=0.6), think=ThinkBudget.parse("off"), seed=5)
    session = Session.create(World(backend(), get_domain("terminal"), settings), path)
    for action in turns:
        list(session.step(action))
    session.close()


def test_another_model_is_refused_naming_the_file_the_session_was_made_with(tmp_path):
    path = tmp_path / "s.jsonl"
    saved_session(path)
    before = path.read_bytes()
    with pytest.raises(InputError) as refused:
        Session.resume(path, backend(OTHER, name="other.gguf"))
    assert "was made with /models/world.gguf" in refused.value.message
    assert "/models/other.gguf is another model" in refused.value.message
    assert "--allow-other-model" in refused.value.hint
    assert path.read_bytes() == before  # nothing written


def test_another_model_on_purpose_records_the_model_on_each_new_turn(tmp_path):
    path = tmp_path / "s.jsonl"
    saved_session(path)
    session = Session.resume(path, backend(OTHER, name="other.gguf"), options=ResumeOptions(allow_other_model=True))
    list(session.step("whoami"))
    list(session.step("id"))
    session.close()
    turns = read_trajectory(path).current_branch()
    assert [t.model for t in turns[:2]] == [None, None]  # made with the header's model
    assert [(t.model.name, t.model.sha256) for t in turns[2:]] == [("other.gguf", OTHER)] * 2
    # Going on again: the last turn's model is the one the session is now made with.
    again = Session.resume(path, backend(OTHER, name="other.gguf"))
    list(again.step("date"))
    again.close()
    assert read_trajectory(path).current_branch()[-1].model.sha256 == OTHER
    with pytest.raises(InputError, match="was made with /models/other.gguf"):
        Session.resume(path, backend(MADE_WITH))


def test_the_same_model_goes_on_and_its_turns_record_nothing_new(tmp_path):
    path = tmp_path / "s.jsonl"
    saved_session(path)
    same = backend()
    session = Session.resume(path, same)
    list(session.step("whoami"))
    session.close()
    record = read_trajectory(path).current_branch()[-1]
    assert record.model is None and record.settings is None
    sampling, think, seed = same.asked[-1]
    assert (sampling.max_tokens, think.mode, seed) == (64, "off", turn_seed(5, 3, 0))


def test_sampling_may_change_on_resume_and_is_recorded_on_the_turns_it_applies_to(tmp_path):
    path = tmp_path / "s.jsonl"
    saved_session(path)
    raised = backend()
    options = ResumeOptions(max_tokens=4096, temperature=0.2, think="full", seed=9)
    session = Session.resume(path, raised, options=options)
    list(session.step("cat big.log"))
    session.close()
    sampling, think, seed = raised.asked[-1]
    assert (sampling.max_tokens, sampling.temperature, think.mode, seed) == (4096, 0.2, "full", turn_seed(9, 3, 0))
    traj = read_trajectory(path)
    assert traj.header.sampling["max_tokens"] == 64  # the header keeps what the session was made with
    assert [t.settings for t in traj.current_branch()] == [
        None, None, {"max_tokens": 4096, "temperature": 0.2, "think": "full", "seed": 9}]
    # A later resume goes on from the last turn's settings; a new option changes only itself.
    later = backend()
    session = Session.resume(path, later, options=ResumeOptions(max_tokens=128))
    list(session.step("ls"))
    session.close()
    sampling, think, seed = later.asked[-1]
    assert (sampling.max_tokens, sampling.temperature, think.mode, seed) == (128, 0.2, "full", turn_seed(9, 4, 0))
    assert read_trajectory(path).current_branch()[-1].settings == {
        "max_tokens": 128, "temperature": 0.2, "think": "full", "seed": 9}


def test_a_fork_goes_on_with_the_sessions_own_model_and_sampling(tmp_path):
    path = tmp_path / "s.jsonl"
    saved_session(path)
    session = Session.resume(path, backend(OTHER, name="other.gguf"),
                             options=ResumeOptions(allow_other_model=True, max_tokens=300))
    child = session.fork(1, tmp_path / "child.jsonl")
    list(child.step("uname"))
    child.close()
    session.close()
    record = read_trajectory(tmp_path / "child.jsonl").current_branch()[-1]
    assert record.settings == {"max_tokens": 300} and record.model.sha256 == OTHER


@pytest.mark.parametrize(("options", "said"), [
    (ResumeOptions(max_tokens=0), "--max-tokens 0"),
    (ResumeOptions(temperature=-1.0), "--temperature -1.0"),
    (ResumeOptions(think="lots"), "thinking budget `lots`"),
])
def test_a_bad_option_is_refused_before_anything_is_read(tmp_path, options, said):
    path = tmp_path / "s.jsonl"
    saved_session(path)
    with pytest.raises(InputError, match=said):
        plan_resume(path, options)


def test_the_plan_takes_the_model_from_the_file_when_none_is_given(tmp_path):
    path = tmp_path / "s.jsonl"
    answers = tmp_path / "answers.json"
    answers.write_text('{"version": 1, "answers": [{"raw": "<predicted_observation>\\nok\\n</predicted_observation>"}]}',
                       encoding="utf-8")
    scripted = ScriptedBackend.from_file(answers)
    session = Session.create(World(scripted, get_domain("terminal"), SessionSettings()), path)
    list(session.step("ls"))
    session.close()
    plan = plan_resume(path)
    assert plan.model == f"scripted:{answers}"
    assert plan_resume(path, ResumeOptions(model="scripted:/elsewhere.json", allow_other_model=True)).model == "scripted:/elsewhere.json"


def served_backend(api_model: str = "qwen-aw") -> ScriptedBackend:
    """Scripted answers that say, as the remote backend does, they come from a server."""
    from dataclasses import replace

    scripted = ScriptedBackend([LS.scripted()])
    scripted.info = replace(scripted.info, name=api_model, path=None, sha256=None, sha256_scope="none",
                            backend="openai", endpoint="http://127.0.0.1:9/v1")
    return scripted


def test_a_session_made_on_a_server_resumes_on_that_server_model_only(tmp_path):
    from agentworld_local.engine.remote.options import RemoteOptions

    path = tmp_path / "s.jsonl"
    session = Session.create(World(served_backend(), get_domain("terminal"), SessionSettings()), path)
    list(session.step("ls"))
    session.close()
    assert plan_resume(path).model == "openai:qwen-aw@http://127.0.0.1:9/v1"  # the server model's one-text form
    assert plan_resume(path, ResumeOptions(model="openai:qwen-aw@http://127.0.0.1:8000/v1")).model  # moved: same model
    with pytest.raises(InputError, match="the server model other is another model"):
        plan_resume(path, ResumeOptions(model="openai:other@http://127.0.0.1:9/v1"))
    same = RemoteOptions(base_url="http://127.0.0.1:9/v1", api_model="qwen-aw")
    assert plan_resume(path, ResumeOptions(remote=same)).model is None
    other = RemoteOptions(base_url="http://127.0.0.1:9/v1", api_model="other")
    with pytest.raises(InputError, match="the server model other is another model"):
        plan_resume(path, ResumeOptions(remote=other))
    with pytest.raises(InputError, match="is another model"):
        plan_resume(path, ResumeOptions(model="scripted:/nowhere.json"))
    with pytest.raises(InputError, match="was made with the server model qwen-aw"):
        Session.resume(path, backend())  # a local model file is not the server's model
    resumed = Session.resume(path, served_backend())
    list(resumed.step("pwd"))
    resumed.close()
    assert read_trajectory(path).current_branch()[-1].model is None


def test_a_replay_says_which_turns_ran_with_other_settings_or_another_model(tmp_path):
    from agentworld_local.trajectory.replay import turn_notes

    path = tmp_path / "s.jsonl"
    saved_session(path)
    session = Session.resume(path, backend(OTHER, name="other.gguf"),
                             options=ResumeOptions(allow_other_model=True, max_tokens=4096, think="full"))
    list(session.step("cat big.log"))
    session.close()
    first, _, resumed = read_trajectory(path).current_branch()
    assert turn_notes(first) == []
    assert turn_notes(resumed) == ["settings other than the header's: max_tokens 4096, think full",
                                   "model other than the header's: /models/other.gguf"]
