"""The message contract: turn rendering, history layout, and parsing of every malformed answer."""

from hypothesis import given
from hypothesis import strategies as st

from agentworld_local.contract import TurnPrompt, build_messages, parse_output


def test_turn_prompt_sections_in_order_and_empty_ones_left_out():
    text = TurnPrompt(turn=1, action='[{"keystrokes": "ls\\n", "duration": 1.0}]', task="Fix the bug", current_state="$ ").render()
    assert text.index("### Turn 1") < text.index("**Task Instruction:**") < text.index("**Current State:**") < text.index("**Action:**")
    assert "**Historical Context:**" not in text
    later = TurnPrompt(turn=2, action="pwd").render()
    assert later == "### Turn 2\n**Action:**\npwd"


def test_history_carries_observations_with_the_marker_and_no_thinking():
    messages = build_messages("SYS", [("### Turn 1\n\n**Action:**\nls", "a.txt")], "### Turn 2\n\n**Action:**\npwd")
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[2]["content"] == "**Environment Observation:**\na.txt"


def test_well_formed_answer():
    parsed = parse_output("<think>\nlist files\n</think>\n\n<predicted_observation>\na.txt\n</predicted_observation>")
    assert (parsed.thinking, parsed.observation, parsed.method) == ("list files", "a.txt", "tag")


def test_prompt_opened_think_block():
    parsed = parse_output("plan\n</think>\n<predicted_observation>ok</predicted_observation>", think_open=True)
    assert parsed.thinking == "plan" and parsed.observation == "ok"


def test_unclosed_think_gives_no_observation_but_keeps_thinking():
    parsed = parse_output("<think>\nstill thinking about it", think_open=False)
    assert parsed.observation == "" and parsed.thinking == "still thinking about it"
    assert parsed.method == "unclosed-think" and not parsed.thinking_closed


def test_unclosed_think_with_a_complete_block_uses_it():
    parsed = parse_output("draft <predicted_observation>x</predicted_observation> hmm", think_open=True)
    assert parsed.observation == "x" and parsed.method == "unclosed-think"


def test_fake_tags_inside_thinking_are_ignored():
    raw = (
        "<think>maybe <predicted_observation>WRONG</predicted_observation> no</think>"
        "<predicted_observation>RIGHT</predicted_observation>"
    )
    assert parse_output(raw).observation == "RIGHT"


def test_several_blocks_take_the_last():
    raw = "<predicted_observation>one</predicted_observation>\n<predicted_observation>two</predicted_observation>"
    assert parse_output(raw).observation == "two"


def test_cut_off_block_keeps_its_text():
    parsed = parse_output("<predicted_observation>one</predicted_observation><predicted_observation>partial out")
    assert (parsed.observation, parsed.method) == ("partial out", "tag-unclosed")


def test_no_tags_falls_back_to_the_marker():
    parsed = parse_output("Sure.\n**Environment Observation:**\nuser@host:~$ ")
    assert (parsed.observation, parsed.method) == ("user@host:~$", "marker")


def test_no_tags_no_marker_uses_cleaned_text():
    parsed = parse_output("  total 0\n</predicted_observation>  ")
    assert (parsed.observation, parsed.method) == ("total 0", "cleaned")


def test_empty_output():
    for raw in ("", "   ", "<think></think>"):
        parsed = parse_output(raw)
        assert parsed.observation == "" and parsed.method == "empty"


def test_observation_keeps_inner_indentation():
    parsed = parse_output("<predicted_observation>\n  indented\nline\n</predicted_observation>")
    assert parsed.observation == "  indented\nline"


def test_thinking_ends_at_the_first_close_tag_as_the_stream_splitter_ends_it():
    raw = "<think>plan</think><predicted_observation>A</predicted_observation> then </think>"
    parsed = parse_output(raw)
    assert (parsed.thinking, parsed.observation) == ("plan", "A")


def test_a_block_keeps_the_spaces_of_the_screen_and_drops_framing_line_breaks():
    parsed = parse_output("<predicted_observation>\r\n\n  x\nroot@box:/# \n\n</predicted_observation>")
    assert parsed.observation == "  x\nroot@box:/# "
    cut = parse_output("<predicted_observation>\n  x\nroot@box:/# \n")
    assert (cut.observation, cut.method) == ("  x\nroot@box:/# ", "tag-unclosed")


def test_streamed_prefix_holds_back_framing_line_breaks_and_partial_tags():
    from agentworld_local.contract.parse import observation_so_far

    assert observation_so_far("no block yet").block_start == -1
    assert observation_so_far("<predicted_observation>\ntotal 0\n").stable == "total 0"
    assert observation_so_far("<predicted_observation>\ntotal 0\n</predicted_obs").stable == "total 0"
    assert observation_so_far("<predicted_observation>a <b").stable == "a <b"


@given(st.lists(st.sampled_from(["<think>", "</think>", "<predicted_observation>", "</predicted_observation>",
                                  "**Environment Observation:**", "<", "\n", " ", "a", "\x00", "\ud800"]),
                max_size=40).map("".join) | st.text(max_size=200),
       st.booleans())
def test_any_text_parses_into_an_observation(raw, think_open):
    parsed = parse_output(raw, think_open=think_open)
    assert isinstance(parsed.observation, str) and parsed.method in (
        "tag", "tag-unclosed", "marker", "cleaned", "unclosed-think", "empty")
