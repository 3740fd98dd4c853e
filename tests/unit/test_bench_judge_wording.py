"""Where the judge's user message gets its words (agentworldbench/judge_wording.py): a pack's
own files, the official checkout around the pack (this test's own stand-in for one), or
awl's wording; each refusal is one line that names the file."""

from __future__ import annotations

import pytest

from agentworld_local.agentworldbench.judge import JudgePrompts, judge_messages
from agentworld_local.agentworldbench.judge_wording import load_wording
from agentworld_local.errors import InputError
from tests.remote.test_judge_official import EVAL_PY, LABELS, TEMPLATE, build_checkout

ROW = {"task": "terminal", "turn_idx": 2, "prompt": ["first action", "second action"],
       "response": ["**Environment Observation:**\nfirst screen", "**Environment Observation:**\nreal screen"],
       "current_prompt": "", "gen": "x"}


def pack_at(path, files: dict[str, str] | None = None):
    (path / "terminal").mkdir(parents=True, exist_ok=True)
    (path / "terminal" / "judge_system_prompt.txt").write_text("Judge (test).", encoding="utf-8")
    for name, text in (files or {}).items():
        (path / name).write_text(text, encoding="utf-8")
    return path


def user_message(pack) -> str:
    return judge_messages(ROW, "predicted screen", JudgePrompts.load(pack, {"terminal"}))[1]["content"]


def refusal(pack) -> str:
    with pytest.raises(InputError) as raised:
        JudgePrompts.load(pack, {"terminal"})
    return raised.value.one_line()


def test_a_pack_on_its_own_keeps_awls_wording(tmp_path):
    pack = pack_at(tmp_path / "pack")
    assert load_wording(pack).kind == "awl"
    user = user_message(pack)
    assert user.startswith("# Earlier turns (agent action, then the real observation):\n\nfirst action\n**Environment Observation:**\nfirst screen")
    assert "# This turn:\n\nsecond action" in user
    assert "**Simulated observation (world model):**\n```\npredicted screen\n```" in user
    assert "**Real observation (ground truth):**\n```\nreal screen\n```" in user
    assert "4, 3" not in user and '"format": 4' not in user, "no example verdict with scores that could anchor a judge"


def test_a_packs_own_template_and_labels_are_used(tmp_path):
    labels = ('context = "<past>{text}</past>"\nworld_model_input = "<now>{text}</now>"\n'
              'predicted_observation = "<sim>{text}</sim>"\nground_truth = "<real>{text}</real>"\n')
    pack = pack_at(tmp_path / "pack", {"judge_user_prompt.txt": "{context}|{world_model_input}|{predicted_observation}|{ground_truth}|{{json}}",
                                       "judge_labels.toml": labels})
    assert load_wording(pack).kind == "pack"
    assert user_message(pack) == ("<past>first action\n**Environment Observation:**\nfirst screen\n\n</past>|<now>second action</now>|"
                                  "<sim>predicted screen</sim>|<real>real screen</real>|{json}")


def test_the_checkout_around_the_pack_gives_the_official_wording(tmp_path):
    pack = build_checkout(tmp_path / "checkout")
    wording = load_wording(pack)
    assert wording.kind == "official" and wording.template == TEMPLATE and wording.labels == LABELS
    assert wording.rules("terminal").verdict_tag == "verdict_here" and wording.rules("mcp").marker == "**Tool Says:**"
    # A domain TASK_CONFIGS does not name: the official fallbacks, mcp's tags and no marker.
    assert wording.rules("android").marker == "" and wording.rules("android").verdict_tag == "verdict_here"
    assert f"the official checkout {tmp_path / 'checkout'}" in wording.notice()


def test_a_packs_own_file_wins_over_the_checkout_part_by_part(tmp_path):
    pack = build_checkout(tmp_path / "checkout")
    (pack / "judge_user_prompt.txt").write_text("{ground_truth} / {predicted_observation}", encoding="utf-8")
    wording = load_wording(pack)
    assert wording.kind == "template pack, labels official" and wording.labels == LABELS
    assert "the template from the pack's" in wording.notice()


@pytest.mark.parametrize(
    ("files", "fragment"),
    [
        ({"judge_labels.toml": 'context = "{text}"\n'}, "judge_labels.toml must name exactly the four labels"),
        ({"judge_labels.toml": 'context = "{text}{text}"\nworld_model_input = "{text}"\npredicted_observation = "{text}"\n'
                               'ground_truth = "{text}"\n'}, "`context` is not a text holding {text} once"),
        ({"judge_labels.toml": "context = \n"}, "judge_labels.toml is not TOML"),
        ({"judge_user_prompt.txt": "{context} {verdict}"}, "is not one awl can fill"),
    ],
)
def test_a_packs_file_awl_cannot_use_is_one_line(tmp_path, files, fragment):
    assert fragment in refusal(pack_at(tmp_path / "pack", files))


@pytest.mark.parametrize(
    ("path", "text", "fragment"),
    [
        ("eval/lwm_eval_utils/task_configs.py", "JUDGE_USER_PROMPT = make()\n", "the text `JUDGE_USER_PROMPT`"),
        ("eval/lwm_eval_utils/task_configs.py", 'JUDGE_USER_PROMPT = "{context}"\n', "`TASK_CONFIGS`"),
        ("eval/eval.py", "def build_judge_messages(job):\n    return 1\n", "the judge's labels (context, world_model_input"),
        ("eval/eval.py", EVAL_PY.replace("{context}", "{context!r}"), "the judge's label `context`"),
        ("eval/eval.py", EVAL_PY.replace("{current_prompt}", "{current_prompt} {model_output_clean}"),
         "the judge's label `world_model_input`"),
        ("eval/eval.py", "def broken(:\n", "not Python this awl can parse"),
    ],
)
def test_a_checkout_awl_cannot_read_is_one_line_that_names_the_file(tmp_path, path, text, fragment):
    pack = build_checkout(tmp_path / "checkout")
    (tmp_path / "checkout" / path).write_text(text, encoding="utf-8")
    message = refusal(pack)
    assert fragment in message and path.split("/")[-1] in message and "judge_labels.toml" in message
