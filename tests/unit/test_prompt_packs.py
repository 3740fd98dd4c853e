"""Prompt packs: a directory laid out like the official `prompts/`, written by the tests."""

from __future__ import annotations

import hashlib
import os

import pytest

from agentworld_local.domains import domain_names, get_domain
from agentworld_local.domains.packs import (
    FILE_NAME,
    builtin_template,
    fill_template,
    load_pack,
    prompt_from_pack,
)
from agentworld_local.errors import InputError
from agentworld_local.trajectory.schema import Header

# A template in the official shape: literal JSON braces beside the two placeholders.
SWE_TEMPLATE = """# Role and Objective

You simulate a repository. A call looks like {"name": "run_shell_command", "arguments": {"command": "ls"}}.
Shell variables such as ${HOME} are text.

# Input Definitions & Action Space

You can simulate the following tools:

{tool_definitions}

# Predicted Observation Requirements
{demonstrations}"""

TICKET_TOOLS = [{"name": "open_ticket", "inputSchema": {"type": "object", "properties": {"title": {"type": "string"}}}}]


def write_pack(root, templates: dict[str, str | bytes]):
    for name, text in templates.items():
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        data = text if isinstance(text, bytes) else text.encode("utf-8")
        (folder / FILE_NAME).write_bytes(data)
    return root


def test_a_pack_prompt_is_the_file_with_the_session_tools_filled_in(tmp_path):
    pack = write_pack(tmp_path / "prompts", {"swe": SWE_TEMPLATE, "terminal": "# Role and Objective\nA shell.\n"})
    domain = get_domain("swe", tools=TICKET_TOOLS)
    text, identity = prompt_from_pack(pack, domain, demonstrations="## Example\n...")
    assert '"name": "open_ticket"' in text and "{tool_definitions}" not in text and "{demonstrations}" not in text
    assert text.endswith("## Example\n...")
    assert '{"name": "run_shell_command", "arguments": {"command": "ls"}}' in text and "${HOME}" in text
    data = (pack / "swe" / FILE_NAME).read_bytes()
    assert identity == {"path": str(pack.resolve()), "files": {"swe/system_prompt.txt": hashlib.sha256(data).hexdigest()}}


def test_the_pack_identity_round_trips_through_the_trajectory_header(tmp_path):
    pack = write_pack(tmp_path / "p", {"terminal": "A terminal.\n"})
    _, identity = prompt_from_pack(pack, get_domain("terminal"))
    header = Header(domain="terminal", prompt_pack=identity)
    assert Header.from_dict(header.to_dict()).prompt_pack == identity
    old = header.to_dict()
    del old["prompt_pack"]
    assert Header.from_dict(old).prompt_pack is None  # files written before the field still read


def test_a_domain_without_tools_fills_tool_definitions_with_nothing(tmp_path):
    pack = write_pack(tmp_path / "p", {"web": "Tools: [{tool_definitions}]\n{demonstrations}"})
    text, _ = prompt_from_pack(pack, get_domain("web"))
    assert text == "Tools: []\n"


def test_a_bom_is_accepted_and_the_hash_is_of_the_bytes_on_disk(tmp_path):
    data = "\ufeffA terminal.\n".encode("utf-8")
    pack = write_pack(tmp_path / "p", {"terminal": data})
    text, identity = prompt_from_pack(pack, get_domain("terminal"))
    assert text == "A terminal.\n"
    assert identity["files"]["terminal/system_prompt.txt"] == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize(
    "setup, fragment",
    [
        (lambda root: None, "does not exist"),
        (lambda root: root.mkdir(), "holds no <domain>/system_prompt.txt"),
        (lambda root: write_pack(root, {"web": "A browser.\n"}), "has no terminal/system_prompt.txt"),
        (lambda root: write_pack(root, {"terminal": "Hello {task_description}\n"}), "unknown placeholder {task_description}"),
        (lambda root: write_pack(root, {"terminal": b"caf\xe9\n"}), "not UTF-8"),
        (lambda root: write_pack(root, {"terminal": "  \n"}), "is empty"),
        (lambda root: (root / "terminal" / FILE_NAME).mkdir(parents=True), "is a directory"),
        (lambda root: root.write_text("x"), "is not a directory"),
    ],
)
def test_a_bad_pack_is_one_clear_input_error(tmp_path, setup, fragment):
    root = tmp_path / "pack"
    setup(root)
    with pytest.raises(InputError) as caught:
        load_pack(root, "terminal")
    assert fragment in caught.value.message
    assert caught.value.hint  # names the next step


def test_a_template_that_is_a_fifo_is_refused_at_once(tmp_path):
    """A FIFO would block the read forever (permissions cannot be tested here: CI runs as root)."""
    pack = tmp_path / "p"
    (pack / "terminal").mkdir(parents=True)
    os.mkfifo(pack / "terminal" / FILE_NAME)
    with pytest.raises(InputError) as caught:
        load_pack(pack, "terminal")
    assert "system_prompt.txt" in caught.value.message and caught.value.hint


def test_our_own_templates_load_as_a_pack_and_give_the_built_in_prompts(tmp_path):
    """A pack in the official layout with our templates reproduces every domain's prompt:
    the loader and the built-in prompts fill placeholders the same way."""
    pack = load_pack(write_pack(tmp_path / "ours", {name: builtin_template(name) for name in domain_names()}))
    for name in domain_names():
        domain = get_domain(name)
        assert pack.system_prompt(domain) == domain.system_prompt()


def test_fill_template_replaces_only_the_two_placeholders():
    template = 'x {tool_definitions} {"a": 1} {demonstrations} {other}'
    assert fill_template(template, tool_definitions="T", demonstrations="D") == 'x T {"a": 1} D {other}'


# -- a session with a pack -----------------------------------------------------------


def test_a_session_spec_with_a_pack_gives_the_model_the_pack_prompt_and_records_its_identity(tmp_path):
    from agentworld_local.engine.world import World
    from agentworld_local.session.core import Session, settings_from_header
    from agentworld_local.session.spec import SessionSpec
    from agentworld_local.testing.answers import answer
    from agentworld_local.engine.scripted import ScriptedBackend
    from agentworld_local.trajectory.reader import read_trajectory

    pack = write_pack(tmp_path / "prompts", {"swe": SWE_TEMPLATE})
    resolved = SessionSpec(domain="swe", tools=TICKET_TOOLS, prompts=pack).resolve()
    seen: list = []

    class Recording(ScriptedBackend):
        def generate(self, messages, **options):
            seen.append(messages)
            return super().generate(messages, **options)

    world = World(Recording([answer("thinking_then_tags").scripted()]), resolved.domain, resolved.settings)
    session = Session.create(world, tmp_path / "s.jsonl")
    list(session.step('open_ticket title="disk full"'))
    session.close()
    system = seen[0][0]["content"]
    assert system.startswith("# Role and Objective\n\nYou simulate a repository.")
    assert '"name": "open_ticket"' in system and "{tool_definitions}" not in system
    header = read_trajectory(tmp_path / "s.jsonl").header
    assert header.system_prompt == system
    digest = hashlib.sha256((pack / "swe" / FILE_NAME).read_bytes()).hexdigest()
    assert header.prompt_pack == {"path": str(pack.resolve()), "files": {"swe/system_prompt.txt": digest}}
    assert settings_from_header(header).prompt_pack == header.prompt_pack  # a resumed session keeps saying so


def test_a_session_spec_with_a_pack_missing_its_domain_is_refused_before_loading(tmp_path):
    from agentworld_local.session.spec import SessionSpec

    pack = write_pack(tmp_path / "prompts", {"swe": SWE_TEMPLATE})
    with pytest.raises(InputError, match="has no terminal/system_prompt.txt"):
        SessionSpec(domain="terminal", prompts=pack).resolve()


# -- awl run --prompts ----------------------------------------------------------------


def test_awl_run_with_prompts_records_the_pack_and_a_bad_pack_is_one_line(tmp_path):
    from agentworld_local.testing.answers import answer
    from agentworld_local.trajectory.reader import read_trajectory
    from tests.cli.helpers import assert_one_line_error, awl, scripted_model

    pack = write_pack(tmp_path / "prompts", {"terminal": "# Role and Objective\nOur pack's terminal.\n"})
    model = scripted_model(tmp_path, answer("thinking_then_tags").raw)
    out = tmp_path / "s.jsonl"
    result = awl("run", "-m", model, "--prompts", str(pack), "--out", str(out), home=tmp_path, stdin="ls\n")
    assert result.returncode == 0, result.stderr
    header = read_trajectory(out).header
    assert header.system_prompt == "# Role and Objective\nOur pack's terminal.\n"
    assert list(header.prompt_pack["files"]) == ["terminal/system_prompt.txt"]
    bad = awl("run", "-m", model, "--prompts", str(pack), "-d", "web", home=tmp_path, stdin="click 1\n")
    assert_one_line_error(bad, "has no web/system_prompt.txt")
