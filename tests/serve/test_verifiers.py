"""verifiers' OpenEnv taskset runs an awl world by base_url (docs/rl.md).

verifiers installs without a training stack, but not beside awl's own test environment (it
pins mcp==2.0.0 and its `openenv` extra the `openenv` package, where awl has mcp>=2.3 and
openenv-core 0.3), so the test makes a virtualenv of its own for it (kept in tests/.cache) and
runs verifiers there against `awl serve --openenv` on 127.0.0.1:

- docs/rl.md's recipe as written: its TOML (read from the page, only the two addresses put to
  this test's servers) with `vf-eval @ FILE --no-rich`, the policy a scripted OpenAI-compatible
  server, the player's program run as a local process (verifiers prepares it with uv, here from
  wheels fetched with the virtualenv: nothing reaches the network);
- verifiers' own engine alone (`tasksets/openenv`'s OpenEnvEnv.run: its GenericEnvClient, its
  `/schema` reading, its action parsing, its reward sum) with a scripted player in place of a
  policy model, to see exactly what the policy is shown.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tomllib
import venv
from pathlib import Path

import pytest

pytest.importorskip("openenv", reason="awl serve --openenv needs openenv-core (pip install 'agentworld-local[openenv]')")
# The slow tier (`pytest -m slow`): verifiers in a virtualenv of its own (made from an index the first time).
pytestmark = pytest.mark.slow

from agentworld_local.scenarios import load_scenario  # noqa: E402
from agentworld_local.testing import ScriptedAnswer, ScriptedBackend  # noqa: E402
from agentworld_local.testing.answers import answer  # noqa: E402
from agentworld_local.trajectory.reader import read_trajectory  # noqa: E402
from tests.remote.fake_openai import FakeOpenAI, Reply  # noqa: E402
from tests.serve.test_openenv import LOCAL, openenv_served  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
VERIFIERS = "verifiers[openenv]>=0.4,<0.5"
#: What the virtualenv holds: verifiers and uv (its local runtime prepares the player's program with it).
NEEDS = (VERIFIERS, "uv")
#: The player's program's dependencies, as verifiers declares them (its PEP 723 script metadata).
PLAYER_DEPENDENCIES = """
import json, re
from verifiers.v1.harnesses.utils.launch import CHAT_PROGRAM
print(json.dumps(json.loads(re.search(r"^# dependencies = (\\[.*\\])$", CHAT_PROGRAM, re.M).group(1))))
"""


def run_or_skip(command: list[str], what: str) -> str:
    done = subprocess.run(command, capture_output=True, text=True, env=LOCAL)
    if done.returncode != 0:
        pytest.skip(f"{what} could not be installed here: {done.stderr.strip().splitlines()[-1:]}")
    return done.stdout


@pytest.fixture(scope="session")
def verifiers_home() -> Path:
    """A virtualenv with verifiers, its OpenEnv extra and uv, and `wheels/`: the player program's
    dependencies, so that vf-eval later prepares it offline (made once; about a minute from an index)."""
    home = ROOT / "tests" / ".cache" / "verifiers-venv"
    python, ready = home / "bin" / "python", home / "ready"
    marker = " ".join(NEEDS) + " + player wheels"
    if not ready.exists() or ready.read_text(encoding="utf-8") != marker:
        venv.create(home, with_pip=True, clear=True)
        run_or_skip([str(python), "-m", "pip", "install", "-q", *NEEDS], "verifiers")
        player = json.loads(run_or_skip([str(python), "-c", PLAYER_DEPENDENCIES], "verifiers' player program"))
        run_or_skip([str(python), "-m", "pip", "wheel", "-q", "-w", str(home / "wheels"), *player],
                    "the player program's dependencies")
        (home / "empty-index").mkdir(exist_ok=True)
        ready.write_text(marker, encoding="utf-8")
    return home


@pytest.fixture(scope="session")
def verifiers_python(verifiers_home) -> Path:
    return verifiers_home / "bin" / "python"


def docs_recipe() -> str:
    """The TOML of docs/rl.md's verifiers recipe, as the page has it."""
    page = (ROOT / "docs" / "rl.md").read_text(encoding="utf-8")
    section = page[page.index("### verifiers"):page.index("### Gymnasium")]
    (recipe,) = re.findall(r"```toml\n(.*?)```", section, re.S)
    return recipe


def test_the_docs_recipe_runs_vf_eval_with_a_local_player_and_policy_against_awl(tmp_path, verifiers_home):
    """docs/rl.md's verifiers recipe, as written: `vf-eval @ FILE --no-rich` with its TOML."""
    recipe = docs_recipe()
    config = tomllib.loads(recipe)
    assert (config["env"]["player"]["runtime"]["type"], config["env"]["player"]["harness"]["id"]) == ("subprocess", "null")

    shown = []  # what the policy was shown: awl's observations, as verifiers hands them over

    def policy(body: dict) -> Reply:  # the scripted policy: look, then end the task
        observation = json.loads(body["messages"][-1]["content"])["observation"]
        shown.append(observation["observation"])
        return Reply("df -h /" if observation["turn"] == 0 else "[]")

    def finished(episode):
        return 1.0 if episode.terminated else 0.25

    fake = FakeOpenAI(models=[config["model"]], respond=policy)
    world = ScriptedBackend([answer("marker_form").scripted(), answer("thinking_then_tags").scripted()])
    try:
        with openenv_served(tmp_path / "awl", world, reward=finished) as url:
            for docs_url, ours in ((config["env"]["taskset"]["base_url"], url),
                                   (config["client"]["base_url"], fake.base_url)):
                assert recipe.count(f'"{docs_url}"') == 1
                recipe = recipe.replace(f'"{docs_url}"', f'"{ours}"')
            (tmp_path / "awl-verifiers.toml").write_text(recipe, encoding="utf-8")
            (tmp_path / "home").mkdir()
            offline = {  # the player's program from the wheels fetched with the virtualenv, no index
                "UV_DEFAULT_INDEX": (verifiers_home / "empty-index").as_uri(), "UV_FIND_LINKS": str(verifiers_home / "wheels"),
                "UV_PYTHON_DOWNLOADS": "never", "UV_CACHE_DIR": str(tmp_path / "uv-cache"), "HOME": str(tmp_path / "home")}
            ran = subprocess.run([str(verifiers_home / "bin" / "vf-eval"), "@", "awl-verifiers.toml", "--no-rich"],
                                 capture_output=True, text=True, cwd=tmp_path, env={
                                     **LOCAL, **offline, "PATH": f"{verifiers_home / 'bin'}{os.pathsep}{LOCAL['PATH']}"})
    finally:
        fake.close()
    assert ran.returncode == 0, ran.stderr[-3000:]
    (traces,) = tmp_path.glob("outputs/*/traces.jsonl")
    rollouts = [trace for line in traces.read_text(encoding="utf-8").splitlines() for trace in json.loads(line)["traces"]]
    assert len(rollouts) == len(config["env"]["taskset"]["resets"]) == 2
    for rollout in rollouts:
        assert rollout["ok"] and not rollout["errors"], rollout["errors"]
        assert rollout["rewards"]["openenv_reward"]["score"] == 1.25  # awl's rewards, summed by verifiers
    # One awl session per reset, as the TOML asks, each played to the world's `done`.
    episodes = sorted(((s.header.scenario or {}).get("name", ""), s.header.task, s.header.seed,
                       [turn.action for turn in s.turns])
                      for s in map(read_trajectory, (tmp_path / "awl").glob("*.jsonl")))
    assert episodes == sorted([("disk-full-server", load_scenario("disk-full-server").task, 7, ["df -h /", "[]"]),
                               ("", "Find the largest log file", 3, ["df -h /", "[]"])])
    # The policy was shown each world's starting screen, then the world model's answer.
    assert len(shown) == 4 and load_scenario("disk-full-server").initial_state in shown
    assert answer("marker_form").observation in shown


def test_verifiers_openenv_taskset_plays_an_awl_world_to_its_end_and_sums_its_rewards(tmp_path, verifiers_python):
    def finished(episode):
        return 1.0 if episode.terminated else 0.25

    backend = ScriptedBackend([answer("marker_form").scripted(), answer("thinking_then_tags").scripted()])
    with openenv_served(tmp_path, backend, reward=finished) as url:
        ran = subprocess.run([str(verifiers_python), str(ROOT / "tests" / "serve" / "verifiers_driver.py"), url,
                              json.dumps(["ls -la", "[]"]), json.dumps({"seed": 3})],
                             capture_output=True, text=True, env=LOCAL)
    assert ran.returncode == 0, ran.stderr
    seen = json.loads(ran.stdout.splitlines()[-1])
    assert seen["stopped"] is None  # ended by the world's `done` (the terminal's `[]`), not by the player
    assert seen["rewards"] == {"openenv_reward": 1.25}  # verifiers summed awl's per-step rewards
    first, second = (payload["observation"] for payload in seen["payloads"])
    assert (first["turn"], second["turn"]) == (0, 1) and seen["payloads"][0]["action_schema"]["required"] == ["action"]
    assert second["observation"] == answer("marker_form").observation  # the model's, nothing run on the host
    (session,) = tmp_path.glob("*.jsonl")
    assert [turn.action for turn in read_trajectory(session).turns] == ["ls -la", "[]"]


#: The world model's reasoning in every answer of the test below: the policy must never read it.
SECRET = "SIMULATOR-SECRET: the flag is hidden in /root/.flag"


def secret_answer(observation: str) -> ScriptedAnswer:
    return ScriptedAnswer(f"<think>\n{SECRET}\n</think>\n<predicted_observation>\n{observation}\n"
                          "</predicted_observation>")


def test_verifiers_sends_the_policy_no_thinking_no_session_id_and_no_path_of_the_world_model(tmp_path,
                                                                                             verifiers_python):
    """Issue 41's agent's view: verifiers shows the policy awl's whole observation object, so by
    default it holds only what the environment would show; the trajectory keeps the thinking."""
    backend = ScriptedBackend([secret_answer("README.md  src"), secret_answer("root@sandbox:/app# ")])
    with openenv_served(tmp_path, backend) as url:
        ran = subprocess.run([str(verifiers_python), str(ROOT / "tests" / "serve" / "verifiers_driver.py"), url,
                              json.dumps(["ls", "[]"]), json.dumps({"seed": 3})],
                             capture_output=True, text=True, env=LOCAL)
    assert ran.returncode == 0, ran.stderr
    seen = json.loads(ran.stdout.splitlines()[-1])
    sent = json.dumps(seen["payloads"])  # everything the scripted player (the policy) was sent
    (session,) = tmp_path.glob("*.jsonl")
    assert len(seen["payloads"]) == 2 and "README.md  src" in sent
    assert "SIMULATOR-SECRET" not in sent and session.stem not in sent and str(tmp_path) not in sent
    assert [turn.thinking.strip() for turn in read_trajectory(session).turns] == [SECRET, SECRET]
