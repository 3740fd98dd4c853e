"""Prompts tokenized from an earlier prompt's tokens up to their last shared special token
(prefix_tokens.py) are exactly what llama.cpp makes of the whole text: on the real tokenizers
of the fixtures (a ChatML template, the hybrid's) and Gemma's, over growing conversations
whose texts hold special-token look-alikes, broken markup and any Unicode."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentworld_local.engine.llama import LlamaBackend, vocab
from agentworld_local.engine.llama.prefix_tokens import PrefixTokenizer, shared_length
from agentworld_local.engine.types import ThinkBudget

PIECES = ["<|im_start|>", "<|im_end|>", "<|im_start", "im_end|>", "<start_of_turn>", "<end_of_turn>", "<think>",
          "</think>", "```json\n", "\n\n", " ", "\t", "ls -la", "é", "日本語", "🙂", "\ufffd", "<", ">", "|"]
TEXT = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=12)), max_size=12).map("".join)


@pytest.fixture(scope="module", params=["qwen_gguf", "llama_gguf"])
def backend(request):
    loaded = LlamaBackend(request.getfixturevalue(request.param), n_ctx=512, gpu_layers=0)
    yield loaded
    loaded.close()


def conversation(system: str, turns: list[tuple[str, str]], last: str) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": system}]
    for user, assistant in turns:
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    return [*messages, {"role": "user", "content": last}]


@given(system=TEXT, turns=st.lists(st.tuples(TEXT, TEXT), min_size=1, max_size=4), last=TEXT)
def test_a_growing_conversation_tokenizes_as_llama_cpp_does_whole(backend, system, turns, last):
    fresh = PrefixTokenizer(lambda text: vocab.tokenize(backend._llm, text), lambda t: vocab.token_text(backend._llm, t),
                            backend._texts.tokenizer._is_special)
    think = ThinkBudget.parse("off")
    for n in range(len(turns) + 1):
        messages = conversation(system, turns[:n], last if n == len(turns) else turns[n][0])
        for text in (backend.template.render(messages, add_generation_prompt=False),
                     vocab.render_prompt(backend.template, messages, think)):
            assert fresh.tokens(text) == tuple(vocab.tokenize(backend._llm, text))


@given(text=st.one_of(TEXT, st.text(), TEXT.map(lambda text: text * 400)))
def test_tokenize_is_llama_cpp_pythons_own(backend, text):
    """vocab.tokenize sizes its buffer by the text (not the training context, per call): the
    tokens are the same, short or long, any Unicode, special tokens and damaged surrogates."""
    data = vocab._LONE_SURROGATE.sub("\ufffd", text).encode("utf-8")
    assert vocab.tokenize(backend._llm, text) == backend._llm.tokenize(data, add_bos=False, special=True)


def test_a_text_that_shares_a_long_history_is_tokenized_only_after_it(backend):
    calls = []

    def counted(text: str) -> list[int]:
        calls.append(len(text))
        return vocab.tokenize(backend._llm, text)

    tokens = PrefixTokenizer(counted, lambda t: vocab.token_text(backend._llm, t), backend._texts.tokenizer._is_special)
    history = conversation("You simulate a terminal. " * 40, [("ls", "a b c " * 30)] * 6, "pwd")
    first = backend.template.render(history, add_generation_prompt=True)
    longer = backend.template.render([*history, {"role": "assistant", "content": "x"}, {"role": "user", "content": "ls"}],
                                     add_generation_prompt=True)
    assert tokens.tokens(first) == tuple(vocab.tokenize(backend._llm, first))
    assert tokens.tokens(longer) == tuple(vocab.tokenize(backend._llm, longer))
    assert calls[0] == len(first) and calls[1] < len(longer) // 10  # only the new turn's text


def test_shared_length_is_the_common_prefix():
    for one, two in [("", ""), ("abc", ""), ("abc", "abd"), ("abc", "abc"), ("日本語x", "日本語y"), ("a" * 5000 + "b", "a" * 5000)]:
        assert shared_length(one, two) == len(os.path.commonprefix([one, two]))


@given(st.integers(0, 20_000), st.integers(0, 20_000), st.integers(0, 20_000), st.booleans())
def test_shared_length_of_long_texts_is_the_common_prefix_wherever_they_part(length, differ_at, limit, as_tokens):
    """Texts of a long history part anywhere: inside a block, at its edge, past the limit."""
    one = "".join(chr(97 + (i * 7) % 26) for i in range(length))
    two = one[:differ_at] + "#" + one[differ_at + 1 :] if differ_at < length else one + "tail"
    if as_tokens:
        one, two = [ord(c) for c in one], [ord(c) for c in two]
    limit = min(limit, len(one), len(two))
    assert shared_length(one, two, limit) == min(limit, len(os.path.commonprefix([one, two])))


@given(system=TEXT, turns=st.lists(st.tuples(TEXT, TEXT), max_size=3), last=TEXT, thinking=st.booleans())
def test_the_turn_boundary_from_one_render_is_the_templates_own(backend, system, turns, last, thinking):
    """The boundary text is the full prompt less the generation prompt (one render of a long
    history): exactly what the template renders without the generation prompt."""
    messages = conversation(system, turns, last)
    think = ThinkBudget.parse("full" if thinking else "off")
    assert backend.render(messages, think=think) == (backend.template.render(messages, add_generation_prompt=False),
                                                     vocab.render_prompt(backend.template, messages, think))


@given(st.lists(st.integers(0, 3), max_size=40), st.lists(st.integers(0, 3), max_size=40), st.integers(0, 40))
def test_shared_length_of_tokens_is_the_common_prefix_up_to_the_limit(one, two, limit):
    limit = min(limit, len(one), len(two))
    expected = 0
    while expected < limit and one[expected] == two[expected]:
        expected += 1
    assert shared_length(one, two, limit) == expected
