"""verifiers' OpenEnv taskset runs an awl world by base_url (docs/rl.md).

verifiers installs without a training stack, but not beside awl's own test environment (it
pins mcp==2.0.0 and its `openenv` extra the `openenv` package, where awl has mcp>=2.3 and
openenv-core 0.3), so the test makes a virtualenv of its own for it (kept in tests/.cache) and
runs verifiers' own engine there (`tasksets/openenv`'s OpenEnvEnv.run: its GenericEnvClient,
its `/schema` reading, its action parsing, its reward sum) against `awl serve --openenv` on
127.0.0.1, with a scripted player in place of a policy model.
"""

from __future__ import annotations

import json
import subprocess
import venv
from pathlib import Path

import pytest

pytest.importorskip("openenv")

from agentworld_local.testing import ScriptedAnswer, ScriptedBackend  # noqa: E402
from agentworld_local.testing.answers import answer  # noqa: E402
from agentworld_local.trajectory.reader import read_trajectory  # noqa: E402
from tests.serve.test_openenv import LOCAL, openenv_served  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
VERIFIERS = "verifiers[openenv]>=0.4,<0.5"


@pytest.fixture(scope="session")
def verifiers_python() -> Path:
    """A virtualenv with verifiers and its OpenEnv extra (made once; about a minute from an index)."""
    home = ROOT / "tests" / ".cache" / "verifiers-venv"
    python = home / "bin" / "python"
    if not (home / "ready").exists():
        venv.create(home, with_pip=True, clear=True)
        made = subprocess.run([str(python), "-m", "pip", "install", "-q", VERIFIERS], capture_output=True, text=True,
                              env=LOCAL, timeout=1800)
        if made.returncode != 0:
            pytest.skip(f"verifiers could not be installed here: {made.stderr.strip().splitlines()[-1:]}")
        (home / "ready").write_text(VERIFIERS, encoding="utf-8")
    return python


def test_verifiers_openenv_taskset_plays_an_awl_world_to_its_end_and_sums_its_rewards(tmp_path, verifiers_python):
    def finished(episode):
        return 1.0 if episode.terminated else 0.25

    backend = ScriptedBackend([answer("marker_form").scripted(), answer("thinking_then_tags").scripted()])
    with openenv_served(tmp_path, backend, reward=finished) as url:
        ran = subprocess.run([str(verifiers_python), str(ROOT / "tests" / "serve" / "verifiers_driver.py"), url,
                              json.dumps(["ls -la", "[]"]), json.dumps({"seed": 3})],
                             capture_output=True, text=True, env=LOCAL, timeout=300)
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
                             capture_output=True, text=True, env=LOCAL, timeout=300)
    assert ran.returncode == 0, ran.stderr
    seen = json.loads(ran.stdout.splitlines()[-1])
    sent = json.dumps(seen["payloads"])  # everything the scripted player (the policy) was sent
    (session,) = tmp_path.glob("*.jsonl")
    assert len(seen["payloads"]) == 2 and "README.md  src" in sent
    assert "SIMULATOR-SECRET" not in sent and session.stem not in sent and str(tmp_path) not in sent
    assert [turn.thinking.strip() for turn in read_trajectory(session).turns] == [SECRET, SECRET]
