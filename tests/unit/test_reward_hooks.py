"""Reward hooks are the user's code: whatever they do when imported, raise or return, a face
gets one AwlError line that names the hook (and the turn), never a traceback, a hang on a
broken value or the process ended by the hook's own SystemExit."""

from __future__ import annotations

import math
import textwrap
import uuid

import pytest

from agentworld_local.errors import AwlError, InputError
from agentworld_local.session.rewards import EpisodeSoFar, PythonReward, Reward, give_reward, reward_hook
from agentworld_local.trajectory.schema import TurnRecord


def episode(turns: int = 2) -> EpisodeSoFar:
    records = tuple(TurnRecord(id=index, parent=index - 1 if index else None, action=f"ls {index}",
                               observation=f"screen {index}") for index in range(turns))
    return EpisodeSoFar("terminal", "List the files", "$ ", records, terminated=False)


def hook_module(tmp_path, monkeypatch, body: str) -> str:
    """A module of the user's on the Python path, named afresh so no test sees another's import."""
    name = f"user_rewards_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def assert_one_line(error: AwlError, *fragments: str) -> None:
    line = error.one_line()
    assert "\n" not in line and "Traceback" not in line, line
    for fragment in fragments:
        assert fragment in line, line


# -- reward_hook: importing the user's module ---------------------------------------------------

@pytest.mark.parametrize("module_code, what", [
    ("import sys\nsys.exit(7)\n", "SystemExit: 7"),
    ("raise KeyboardInterrupt\n", "KeyboardInterrupt"),
    ("x = 1 / 0\n", "ZeroDivisionError"),
    ("def broken(:\n", "SyntaxError"),
    ("import no_such_dependency_of_awl_tests\n", "No module named 'no_such_dependency_of_awl_tests'"),
    ("raise GeneratorExit('odd')\n", "GeneratorExit: odd"),
    ("raise ValueError('first line\\nsecond line')\n", "ValueError: first line second line"),
])
def test_a_module_that_fails_as_it_is_imported_is_one_input_error_naming_the_spec(tmp_path, monkeypatch,
                                                                                    module_code, what):
    module = hook_module(tmp_path, monkeypatch, module_code + "def reward(episode):\n    return 1.0\n")
    with pytest.raises(InputError) as failure:
        reward_hook(f"{module}:reward")
    assert_one_line(failure.value, f"`{module}:reward`", what, "Fix the module", f"import {module}")


def test_a_module_that_is_not_there_says_to_check_the_python_path():
    with pytest.raises(InputError) as failure:
        reward_hook("nope_module_of_awl_tests:reward")
    assert_one_line(failure.value, "Cannot import", "`nope_module_of_awl_tests:reward`", "PYTHONPATH")


def test_a_module_s_getattr_that_raises_is_one_input_error(tmp_path, monkeypatch):
    module = hook_module(tmp_path, monkeypatch, """
        def __getattr__(name):
            raise SystemExit(3)
    """)
    with pytest.raises(InputError) as failure:
        reward_hook(f"{module}:reward")
    assert_one_line(failure.value, f"`{module}:reward`", "SystemExit: 3")


def test_a_module_that_imports_gives_its_function_named_by_where_it_lives(tmp_path, monkeypatch):
    module = hook_module(tmp_path, monkeypatch, "def reward(episode):\n    return len(episode.turns)\n")
    hook = reward_hook(f" {module}:reward ")
    assert isinstance(hook, PythonReward) and hook.name == f"python:{module}.reward"
    assert give_reward(hook, episode(3)) == Reward(3.0, hook.name)


# -- reward_hook: functions and hooks made already ------------------------------------------------

def test_a_hook_made_already_comes_back_unchanged_so_faces_may_normalise_twice():
    def progress(episode):
        return 0.5

    hook = reward_hook(progress)
    assert isinstance(hook, PythonReward) and hook.function is progress
    assert reward_hook(hook) is hook and reward_hook(reward_hook(hook)) is hook
    assert hook.name == f"python:{__name__}.{progress.__qualname__}"


def test_a_callable_object_and_one_whose_name_is_not_text_are_wrapped_as_python_rewards():
    class Scorer:
        def __call__(self, episode):
            return 0.25

    class Named:
        name = 42  # not a hook's name: the object is the user's function

        def __call__(self, episode):
            return 0.75

    scorer, named = reward_hook(Scorer()), reward_hook(Named())
    assert isinstance(scorer, PythonReward) and scorer.name == f"python:{__name__}.{Scorer.__qualname__}"
    assert isinstance(named, PythonReward) and named.name == f"python:{__name__}.{Named.__qualname__}"
    assert give_reward(scorer, episode()).value == 0.25 and give_reward(named, episode()).value == 0.75


def test_an_object_whose_name_property_raises_is_still_a_python_reward():
    class Touchy:
        @property
        def name(self):
            raise RuntimeError("no name")

        def __call__(self, episode):
            return 1

    hook = reward_hook(Touchy())
    assert isinstance(hook, PythonReward) and give_reward(hook, episode()) == Reward(1.0, hook.name)


# -- give_reward: what the hook raises -----------------------------------------------------------

def raising(error: BaseException):
    def reward(episode):
        raise error
    return PythonReward(reward)


@pytest.mark.parametrize("error, what", [
    (SystemExit(7), "SystemExit: 7"),
    (KeyboardInterrupt(), "KeyboardInterrupt"),
    (GeneratorExit(), "GeneratorExit"),
    (ZeroDivisionError("division by zero"), "ZeroDivisionError: division by zero"),
    (RuntimeError("two\nlines"), "RuntimeError: two lines"),
])
def test_anything_the_hook_raises_is_one_awl_error_naming_the_hook_and_the_turn(error, what):
    hook = raising(error)
    with pytest.raises(AwlError) as failure:
        give_reward(hook, episode(2))
    assert type(failure.value) is AwlError
    assert_one_line(failure.value, hook.name, "turn 2", what, "fix the reward function")


def test_an_awl_error_from_the_hook_keeps_its_message_and_hint_and_names_the_hook_and_turn():
    hook = raising(InputError("The grader's rubric is empty.", "Fill in rubric.txt."))
    with pytest.raises(AwlError) as failure:
        give_reward(hook, episode(3))
    # A plain AwlError: a hook's ActionError must not read as the agent's invalid action.
    assert type(failure.value) is AwlError
    assert_one_line(failure.value, hook.name, "turn 3", "The grader's rubric is empty.", "Fill in rubric.txt.")


def test_an_exception_whose_text_cannot_be_read_is_still_named():
    class Unprintable(Exception):
        def __str__(self):
            raise RuntimeError("no text")

    with pytest.raises(AwlError) as failure:
        give_reward(raising(Unprintable()), episode(1))
    assert_one_line(failure.value, "turn 1", "Unprintable")


# -- give_reward: what the hook returns ------------------------------------------------------

@pytest.mark.parametrize("value, what", [
    (True, "bool True"),
    ("1.0", "str '1.0'"),
    (None, "NoneType None"),
    (math.nan, "nan"),
    (math.inf, "inf"),
    (-math.inf, "-inf"),
    (10**400, "int 1000"),
    ([1.0], "list [1.0]"),
    (1 + 0j, "complex"),
])
def test_a_value_that_is_not_a_finite_number_is_refused_naming_the_hook_and_the_turn(value, what):
    hook = PythonReward(lambda episode: value)
    with pytest.raises(AwlError) as failure:
        give_reward(hook, episode(2))
    assert_one_line(failure.value, hook.name, "turn 2", what, "not a finite number")
    assert len(failure.value.one_line()) < 1000  # a huge int is quoted cut, not whole


@pytest.mark.parametrize("value", [math.nan, 10**400, "high", False])
def test_a_reward_whose_value_is_not_a_finite_number_is_refused_the_same_way(value):
    hook = PythonReward(lambda episode: Reward(value, "my-grader"))
    with pytest.raises(AwlError) as failure:
        give_reward(hook, episode(1))
    assert_one_line(failure.value, hook.name, "turn 1", "not a finite number")


def test_numbers_that_fit_are_floats():
    for value, expected in ((3, 3.0), (-2, -2.0), (0.5, 0.5), (10**300, 1e300)):
        reward = give_reward(PythonReward(lambda episode, value=value: value), episode())
        assert reward.value == expected and type(reward.value) is float
    reward = give_reward(PythonReward(lambda episode: Reward(1, "grader", {"reason": "done"})), episode())
    assert reward == Reward(1.0, "grader", {"reason": "done"}) and type(reward.value) is float


@pytest.mark.parametrize("verdict, what", [
    ({"seen": {1, 2}}, "not JSON"),
    ({"score": math.nan}, "not JSON"),
    ({"by": object()}, "not JSON"),
    (["a", "list"], "list, not a dict"),
    ("passed", "str, not a dict"),
])
def test_a_verdict_that_is_not_a_json_dict_is_refused_naming_the_hook_and_the_turn(verdict, what):
    hook = PythonReward(lambda episode: Reward(0.5, "my-grader", verdict))
    with pytest.raises(AwlError) as failure:
        give_reward(hook, episode(4))
    assert_one_line(failure.value, hook.name, "turn 4", "verdict", what)


def test_a_verdict_that_holds_itself_is_refused():
    looped: dict = {}
    looped["self"] = looped
    with pytest.raises(AwlError) as failure:
        give_reward(PythonReward(lambda episode: Reward(0.5, "grader", looped)), episode(1))
    assert_one_line(failure.value, "turn 1", "not JSON")


def test_the_verdict_given_is_a_copy_the_hook_cannot_change_later():
    kept = {"notes": ["good"]}
    reward = give_reward(PythonReward(lambda episode: Reward(0.5, "grader", kept)), episode())
    kept["notes"].append("changed afterwards")
    assert reward.verdict == {"notes": ["good"]}


def test_a_reward_whose_source_is_not_text_is_refused():
    hook = PythonReward(lambda episode: Reward(0.5, None))  # type: ignore[arg-type]
    with pytest.raises(AwlError) as failure:
        give_reward(hook, episode(1))
    assert_one_line(failure.value, hook.name, "turn 1", "source")


def test_an_awl_error_made_without_its_message_is_still_one_line_naming_the_hook():
    class Bare(AwlError):
        def __init__(self):  # no super().__init__: no message, no hint
            pass

    hook = raising(Bare())
    with pytest.raises(AwlError) as failure:
        give_reward(hook, episode(2))
    assert_one_line(failure.value, hook.name, "turn 2", "Bare", "fix the reward function")
