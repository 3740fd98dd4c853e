"""The task judge (`reward="judge:MODEL@URL"`) against a judge server on 127.0.0.1 whose answers
the test writes: no request before the end, one at the end with the whole episode in it, the
verdict read forgivingly, and every failure a 0.0 reward with an `error` verdict, never a raise."""

from __future__ import annotations

import json

import pytest

from agentworld_local.errors import InputError
from agentworld_local.session.rewards import EpisodeSoFar, Reward, give_reward, reward_hook
from agentworld_local.session.rewards.task_judge import OBSERVATION_CHARS, TRANSCRIPT_CHARS, TaskJudge, read_verdict
from agentworld_local.trajectory.schema import TurnRecord
from tests.remote.conftest import free_port
from tests.remote.fake_openai import Reply

TASK = "Create notes.txt holding the word hello."
STATE = "$ ls\nREADME.md"
TURNS = (TurnRecord("echo hello > notes.txt", ""), TurnRecord("cat notes.txt", "hello"), TurnRecord("ls", "README.md\nnotes.txt"))


def episode(*, terminated: bool = True, final: bool = False, turns: tuple[TurnRecord, ...] = TURNS) -> EpisodeSoFar:
    return EpisodeSoFar(domain="terminal", task=TASK, initial_state=STATE, turns=turns, terminated=terminated, final=final)


@pytest.fixture
def judge(fake):
    fake.models[:] = ["judge"]
    return TaskJudge.from_spec(f"judge@{fake.base_url}")


def answer(fake, text: str) -> None:
    fake.replies[:] = [Reply(text)]


def test_no_request_before_the_end(fake, judge):
    answer(fake, '{"achieved": true, "score": 1.0, "reason": "done"}')
    for step in range(1, len(TURNS) + 1):
        reward = judge(episode(terminated=False, turns=TURNS[:step]))
        assert reward == Reward(0.0, f"judge:judge@{fake.base_url}")
    assert fake.requests == []


def test_one_request_at_the_end_holds_the_whole_episode_in_order(fake, judge):
    answer(fake, '{"achieved": true, "score": 0.9, "reason": "notes.txt holds hello"}')
    reward = judge(episode())
    assert len(fake.requests) == 1
    body = fake.requests[0]
    assert body["model"] == "judge" and body["temperature"] == 0.0 and body["max_tokens"] == 512
    system, user = body["messages"]
    assert system["role"] == "system" and user["role"] == "user" and "JSON" in system["content"]
    text = user["content"]
    assert TASK in text and STATE in text and "declared the task done" in text
    places = [text.index(f"Action:\n{t.action}\n\nObservation:\n{t.observation}") for t in TURNS]
    assert places == sorted(places)
    assert reward.value == 0.9 and reward.source == judge.name == f"judge:judge@{fake.base_url}"
    assert reward.verdict == {"achieved": True, "score": 0.9, "reason": "notes.txt holds hello",
                              "judge_model": "judge", "endpoint": fake.base_url}
    assert give_reward(judge, episode()).value == 0.9  # what a session does with it


def test_the_step_limit_is_said_as_running_out(fake, judge):
    answer(fake, '{"achieved": false, "score": 0.2, "reason": "never wrote the file"}')
    reward = judge(episode(terminated=False, final=True))
    assert "ran out of steps" in fake.requests[0]["messages"][1]["content"]
    assert reward.value == 0.2 and reward.verdict["achieved"] is False


@pytest.mark.parametrize("text, achieved, score", [
    ('Looking at turn 2, the file holds hello.\n```json\n{"achieved": true, "score": 0.75, "reason": "ok"}\n```\nThat is all.', True, 0.75),
    ('<think>Maybe {"achieved": false, "score": 0}?</think>Verdict: {"achieved": "true", "score": "1", "reason": "ok",}', True, 1.0),
    ('{"achieved": true}', True, 1.0),
    ('{"achieved": false}', False, 0.0),
    ('{"achieved": true, "score": 7}', True, 1.0),  # clamped
    ('{"score": -0.5, "reason": "worse than nothing"}', None, 0.0),
])
def test_verdicts_are_read_forgivingly(fake, judge, text, achieved, score):
    answer(fake, text)
    reward = judge(episode())
    assert (reward.verdict["achieved"], reward.value, reward.verdict["score"]) == (achieved, score, score)
    assert "error" not in reward.verdict


@pytest.mark.parametrize("text", ["It went well, I think.", "", '{"verdict": "yes"}', '{"achieved": "maybe"}'])
def test_an_unreadable_answer_is_zero_with_an_error(fake, judge, text):
    answer(fake, text)
    reward = judge(episode())
    assert reward.value == 0.0 and reward.source == judge.name
    assert reward.verdict["judge_model"] == "judge" and "no verdict" in reward.verdict["error"]
    assert "\n" not in reward.verdict["error"]


def test_an_http_error_is_zero_with_an_error_after_the_clients_one_retry(fake, judge):
    fake.errors[:] = [(500, "judge fell over"), (500, "judge fell over")]
    reward = judge(episode())
    assert reward.value == 0.0 and "500" in reward.verdict["error"] and reward.verdict["endpoint"] == fake.base_url
    assert fake.calls == 2  # the client's one retry, none of the judge's own
    answer(fake, '{"achieved": true}')
    assert judge(episode()).value == 1.0  # the next episode is judged again


def test_an_unreachable_judge_is_zero_with_an_error(fake):
    judge = TaskJudge.from_spec(f"judge@http://127.0.0.1:{free_port()}/v1", retries=0)
    reward = judge(episode())
    assert reward.value == 0.0 and "127.0.0.1" in reward.verdict["error"]
    assert judge(episode(terminated=False)).verdict is None


@pytest.mark.parametrize("spec", ["", "judge", "judge@", "@http://127.0.0.1:8000/v1", "judge@ftp://host/v1", "judge@http://"])
def test_a_malformed_spec_is_an_input_error_naming_the_form(spec):
    with pytest.raises(InputError) as raised:
        TaskJudge.from_spec(spec)
    assert "judge:MODEL@URL" in raised.value.hint and "\n" not in raised.value.one_line()


def test_an_unset_key_variable_is_said_when_the_judge_is_made(monkeypatch):
    monkeypatch.delenv("AWL_TEST_JUDGE_KEY", raising=False)
    with pytest.raises(InputError, match="AWL_TEST_JUDGE_KEY"):
        TaskJudge.from_spec("judge@http://127.0.0.1:8000/v1", api_key_env="AWL_TEST_JUDGE_KEY")


def test_reward_hook_gives_a_task_judge(fake):
    hook = reward_hook(f"judge:judge@{fake.base_url}")
    assert isinstance(hook, TaskJudge) and hook.name == f"judge:judge@{fake.base_url}"
    with pytest.raises(InputError) as raised:
        reward_hook("judge:nothing")
    assert "judge:MODEL@URL" in raised.value.one_line()


def test_a_users_pack_is_used(fake, tmp_path):
    pack = tmp_path / "pack.toml"
    pack.write_text('system = "Strict judge. Reply {\\"achieved\\": bool}. Task: {task}"\n'
                    'user = "STATE<{initial_state}> RUN<{transcript}> END<{ending}>"\n', encoding="utf-8")
    fake.models[:] = ["judge"]
    judge = TaskJudge.from_spec(f"judge@{fake.base_url}", pack=pack)
    answer(fake, '{"achieved": false}')
    reward = judge(episode(turns=(TurnRecord("say {task}", "ok"),)))
    system, user = fake.requests[0]["messages"]
    assert system["content"] == f'Strict judge. Reply {{"achieved": bool}}. Task: {TASK}'
    assert user["content"].startswith(f"STATE<{STATE}> RUN<## Turn 1\nAction:\nsay {{task}}\n")  # filled once only
    assert user["content"].endswith("END<The agent declared the task done: its last action ended the episode.>")
    assert reward.verdict["pack"] == str(pack.resolve()) and reward.value == 0.0


@pytest.mark.parametrize("content, said", [
    ('system = "{task} {initial_state}"\nuser = "{transcript}"\n', "{ending}"),
    ('user = "{task} {initial_state} {transcript} {ending}"\n', "`system`"),
    ("system = [unclosed\n", "not TOML"),
])
def test_a_bad_pack_is_an_input_error(tmp_path, content, said):
    pack = tmp_path / "pack.toml"
    pack.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as raised:
        TaskJudge.from_spec("judge@http://127.0.0.1:8000/v1", pack=pack)
    assert said in raised.value.message and "{transcript}" in raised.value.hint


def test_a_pack_that_cannot_be_read_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="does not exist") as raised:
        TaskJudge("judge", "http://127.0.0.1:8000/v1", pack=tmp_path / "none.toml")
    assert raised.value.hint


def test_long_texts_are_cut_in_the_middle_and_the_last_turns_kept(fake, judge):
    answer(fake, '{"achieved": true}')
    long = "A" * 5_000 + "MIDDLE" + "Z" * 5_000
    many = tuple(TurnRecord(f"step {n}", long if n == 0 else f"out {n} " + "x" * 2_000) for n in range(40))
    judge(episode(turns=many))
    text = fake.requests[0]["messages"][1]["content"]
    assert "MIDDLE" not in text and "characters cut ..." in text and "A" * (OBSERVATION_CHARS // 2) in text
    assert "Action:\nstep 0\n" in text and "Action:\nstep 39\n" in text and "left out ..." in text
    assert len(text) < TRANSCRIPT_CHARS + 10_000


def test_read_verdict_says_why_it_found_none():
    assert read_verdict("") == "the judge answered nothing"
    assert "achieved" in read_verdict(json.dumps({"score": "high"}))


DEEP = b"[" * 100_000
#: What a judge server that is not quite OpenAI-compatible answers to the chat request, and what
#: the verdict's error must say of it (besides the URL).
UNREADABLE = {
    "web-page": ((200, "text/html; charset=utf-8", b"<!doctype html><html><body>Sign in</body></html>"), "a web page"),
    "other-json": ((200, "application/json", b'{"status": "ok", "result": "done"}'), "JSON of another shape"),
    "choices-of-text": ((200, "application/json", b'{"choices": ["yes"]}'), "JSON of another shape"),
    "message-null": ((200, "application/json", b'{"choices": [{"message": null}]}'), "JSON of another shape"),
    "content-number": ((200, "application/json", b'{"choices": [{"message": {"content": 5}}]}'), "JSON of another shape"),
    "array": ((200, "application/json", b"[1, 2]"), "JSON of another shape"),
    "event-stream": ((200, "text/event-stream", b'data: {"choices": []}\n\ndata: [DONE]\n\n'), "an event stream"),
    "empty": ((200, "application/json", b""), "an empty body"),
    "empty-no-type": ((200, "", b""), "an empty body"),
    "not-json": ((200, "text/plain", b"Verdict: achieved"), "not JSON"),
    "deep": ((200, "application/json", DEEP), "not JSON"),
    "deep-object": ((200, "application/json", b'{"a":' * 100_000 + b"1" + b"}" * 100_000), "not JSON"),
    "5xx-page": ((500, "text/html", b"<html><body>Internal Server Error</body></html>"), "HTTP 500"),
    "5xx-empty": ((503, "", b""), "HTTP 503"),
}


@pytest.mark.parametrize("name", sorted(UNREADABLE))
def test_an_answer_that_is_no_chat_completion_is_zero_with_an_error_naming_the_url(fake, name):
    """docs/rewards.md: failures never raise. Whatever the judge server sends back to the chat
    request, the episode gets 0.0 and a one-line `error` verdict naming the URL and what came."""
    fake.models[:] = ["judge"]
    judge = TaskJudge.from_spec(f"judge@{fake.base_url}", retries=0)
    raw, said = UNREADABLE[name]
    fake.raw_answers[:] = [raw]
    reward = judge(episode())
    assert reward.value == 0.0 and reward.source == judge.name
    error = reward.verdict["error"]
    assert fake.base_url in error and said in error and "\n" not in error, error
    assert len(error) < 600 and "Sign in" not in error  # what a page says is not quoted
    assert reward.verdict["judge_model"] == "judge" and reward.verdict["endpoint"] == fake.base_url
    answer(fake, '{"achieved": true}')
    assert judge(episode()).value == 1.0  # the next episode is judged again
