"""A misspelled keyword to any way of making an environment is one clear error that names the
keyword it was likely meant as (every misspelling at once), before anything is made: no model
is loaded, no folder is created. `make`, `gymnasium.make` (its own keywords included),
`gymnasium.make_vec` and the TRL adapter's `environment_factory`."""

from __future__ import annotations

import pytest

import agentworld_local
from agentworld_local.env.trl import environment_factory
from agentworld_local.errors import InputError

gymnasium = pytest.importorskip("gymnasium")

import agentworld_local.env.gym  # noqa: E402, F401  (registers the ids)


def refused(make, **keywords) -> InputError:
    with pytest.raises(InputError) as raised:
        make(**keywords)
    return raised.value


@pytest.mark.parametrize(("wrong", "meant"), [
    ("temprature", "temperature"), ("max_tokns", "max_tokens"), ("modle", "model"), ("out_dri", "out_dir"),
    ("reveal_simulater", "reveal_simulator"), ("rewrad", "reward"),
])
def test_make_names_the_keyword_it_was_meant_as(tmp_path, wrong, meant):
    error = refused(agentworld_local.make, id_or_domain="terminal", model="scripted:never-read.json", **{wrong: 1})
    assert error.message == f"Unknown option `{wrong}` for an environment."
    assert error.hint.startswith(f"Did you mean `{meant}`? Accepted: model, task,")


@pytest.mark.parametrize(("wrong", "meant"), [
    ("temprature", "temperature"), ("modle", "model"), ("render_mod", "render_mode"),
    ("max_episode_step", "max_episode_steps"), ("disable_env_checkr", "disable_env_checker"), ("thnk", "think"),
])
def test_gymnasium_make_names_the_keyword_its_own_included_and_makes_nothing(tmp_path, monkeypatch, wrong, meant):
    monkeypatch.setenv("AWL_HOME", str(tmp_path / "home"))
    error = refused(gymnasium.make, id="agentworld/Terminal-v0", model="scripted:never-read.json", **{wrong: 1})
    assert error.message == f"Unknown option `{wrong}` for agentworld/Terminal-v0."
    assert f"Did you mean `{meant}`?" in error.hint and "max_episode_steps" in error.hint
    assert not (tmp_path / "home").exists()  # no run folder, no session


def test_every_misspelled_keyword_is_named_at_once_each_with_its_guess():
    error = refused(gymnasium.make, id="agentworld/DiskFullServer-v0", model="scripted:never-read.json",
                    temprature=0.2, max_tokns=64, colour="red")
    assert error.message == "Unknown options `colour`, `max_tokns`, `temprature` for agentworld/DiskFullServer-v0."
    assert error.hint.startswith("`max_tokns`: did you mean `max_tokens`? `temprature`: did you mean "
                                 "`temperature`? Accepted: model, render_mode,")
    assert "`colour`:" not in error.hint  # nothing close: no guess


def test_the_vector_env_and_the_trl_adapter_name_their_own_keywords_too():
    error = refused(gymnasium.make_vec, id="agentworld/Terminal-v0", num_envs=2, base_ur="http://127.0.0.1:9")
    assert error.message == "Unknown option `base_ur` for the vector env."  # not "it needs base_url"
    assert error.hint.startswith("Did you mean `base_url`?")
    error = refused(gymnasium.make_vec, id="agentworld/Terminal-v0", num_envs=2, base_url="http://127.0.0.1:9",
                    temprature=0.5)
    assert error.hint.startswith("Did you mean `temperature`?")
    error = refused(environment_factory, world="terminal", base_ur="http://127.0.0.1:9")
    assert error.message == "Unknown option `base_ur` for a TRL environment."
    assert error.hint.startswith("Did you mean `base_url`?")
    error = refused(environment_factory, world="terminal", base_url="http://127.0.0.1:9", owns_rewards=True)
    assert error.hint.startswith("Did you mean `owns_reward`?")
