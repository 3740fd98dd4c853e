"""The file tree probe on a real World (tiny `qwen35moe` fixture, real llama.cpp path).

The random model writes garbage, so these tests check what a user relies on: the probe is
a hidden turn (never in the history, never saved), the next real turn is exactly what it
would have been without the probe, and the result is a FileTree whatever the model wrote.
"""

from __future__ import annotations

import pytest

from agentworld_local.domains import get_domain
from agentworld_local.views.file_tree import FileTree, probe_file_tree
from agentworld_local.engine.llama import LlamaBackend
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.world import World
from agentworld_local.errors import InputError

FIRST = {"terminal": "cd /home/user/project", "swe": "bash git status", "os": "click 40 150"}
SECOND = {"terminal": "cat README.md", "swe": "read_file path=README.md", "os": 'type "hello"'}


@pytest.fixture(scope="module")
def backend(qwen_gguf):
    engine = LlamaBackend(qwen_gguf, n_ctx=8192, gpu_layers=0)
    yield engine
    engine.close()


def make_world(backend, domain: str, saved: list) -> World:
    backend.reset()
    settings = SessionSettings(
        sampling=SamplingConfig(temperature=0.8, max_tokens=24), think=ThinkBudget.parse("4"), seed=11
    )
    return World(backend, get_domain(domain), settings, on_turn=saved.append)


@pytest.mark.parametrize("domain", ["terminal", "swe", "os"])
def test_probe_is_hidden_and_leaves_the_next_turn_unchanged(backend, domain):
    saved: list = []
    world = make_world(backend, domain, saved)
    world.run_turn(FIRST[domain])
    before = list(world.history)

    tree = probe_file_tree(world, "/home/user")

    assert isinstance(tree, FileTree) and tree.root.name == "/home/user"
    assert world.history == before and len(saved) == 1, "the probe must not enter the history or the trajectory"
    probed_next = world.run_turn(SECOND[domain])

    # The same session without the probe, from a fresh start.
    fresh_saved: list = []
    fresh = make_world(backend, domain, fresh_saved)
    fresh.run_turn(FIRST[domain])
    plain_next = fresh.run_turn(SECOND[domain])

    assert plain_next.raw_output and probed_next.raw_output == plain_next.raw_output
    assert probed_next.prompt == plain_next.prompt and probed_next.turn == 2
    assert [r.turn for r in saved] == [1, 2]


def test_probe_works_on_a_session_without_turns(backend):
    world = make_world(backend, "terminal", [])
    tree = probe_file_tree(world)
    assert isinstance(tree, FileTree) and tree.root.name == "/"
    assert world.history == []


def test_probe_in_a_domain_without_a_file_system_is_an_input_error(backend):
    world = make_world(backend, "web", [])
    with pytest.raises(InputError, match="The web domain has no file system"):
        probe_file_tree(world)
