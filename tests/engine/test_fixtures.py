"""The tiny GGUF fixtures load and run in the real llama.cpp, and their templates behave."""

from __future__ import annotations

import ctypes

import jinja2.sandbox
import numpy as np
import pytest

from agentworld_local.fixtures import tiny_gguf

llama_cpp = pytest.importorskip("llama_cpp")

TEXT = (
    "### Turn 1\n**Action:**\n```json\n[{\"keystrokes\": \"ls -la\\n\", \"duration\": 1.0}]\n```\n"
    "**Environment Observation:**\n```\ntotal 48\ndrwxr-xr-x 2 root root 4096 Dec  2 11:19 src\n```\n"
)


def render(template: str, messages: list[dict], **kwargs) -> str:
    def raise_exception(msg: str) -> None:
        raise jinja2.exceptions.TemplateError(msg)

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    return env.from_string(template).render(
        messages=messages, bos_token="<|endoftext|>", eos_token="<|im_end|>", **kwargs
    )


def decode(llm, tokens: list[int]) -> np.ndarray:
    """Decode ``tokens`` as one batch on sequence 0 and return the last row of logits."""
    arr = (llama_cpp.llama_token * len(tokens))(*tokens)
    assert llama_cpp.llama_decode(llm.ctx, llama_cpp.llama_batch_get_one(arr, len(tokens))) == 0
    row = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
    return np.ctypeslib.as_array(row, shape=(llm.n_vocab(),)).copy()


def prompt_tokens(llm, n: int) -> list[int]:
    tokens = llm.tokenize(("<|im_start|>user\n" + TEXT * 4).encode(), add_bos=False, special=True)
    assert len(tokens) >= n
    return tokens[:n]


@pytest.fixture(scope="module", params=["llama", "qwen35moe"])
def model(request, llama_gguf, qwen_gguf):
    path = {"llama": llama_gguf, "qwen35moe": qwen_gguf}[request.param]
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=2048, verbose=False)
    yield request.param, llm
    llm.close()


# --- the generator --------------------------------------------------------------------

def test_merges_are_learned_and_deterministic():
    merges = tiny_gguf.learn_merges()
    assert 300 <= len(merges) <= 800
    tokens, types, merge_strs = tiny_gguf.build_vocab()
    assert len(tokens) == len(types) == len(set(tokens))
    assert all(a + b in tokens for a, b in merges)  # llama.cpp needs every merge result
    assert merge_strs[0] == " ".join(merges[0])


def test_ensure_fixture_caches_and_is_reproducible(tmp_path):
    first = tiny_gguf.ensure_fixture("qwen35moe", tmp_path)
    assert first.name == f"tiny-qwen35moe-v{tiny_gguf.FIXTURE_VERSION}.gguf"
    mtime = first.stat().st_mtime_ns
    assert tiny_gguf.ensure_fixture("qwen35moe", tmp_path).stat().st_mtime_ns == mtime
    again = tiny_gguf.write_qwen35moe_fixture(tmp_path / "again.gguf")
    assert again.read_bytes() == first.read_bytes()
    assert first.stat().st_size < 2 * 1024 * 1024
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".tmp"] == []
    with pytest.raises(ValueError):
        tiny_gguf.ensure_fixture("gpt9", tmp_path)


def test_cli_writes_both(tmp_path):
    tiny_gguf.main([str(tmp_path)])
    assert sorted(p.name for p in tmp_path.glob("*.gguf")) == sorted(
        tiny_gguf.fixture_filename(k) for k in tiny_gguf.KINDS
    )


# --- the chat templates ---------------------------------------------------------------

def test_llama_template_is_plain_chatml():
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "<think>x</think>yo"}]
    out = render(tiny_gguf.CHATML_TEMPLATE, messages, add_generation_prompt=True)
    assert out == (
        "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
        "<|im_start|>assistant\n<think>x</think>yo<|im_end|>\n<|im_start|>assistant\n"
    )


CONVERSATIONS = [
    [{"role": "user", "content": "ls -la"}],
    [{"role": "system", "content": "  You simulate a shell.\n"}, {"role": "user", "content": " ls \n"}],
    [
        {"role": "system", "content": "You simulate a shell."},
        {"role": "user", "content": "ls"},
        {"role": "assistant", "content": "<think>\nlist files\n</think>\n\nsrc  tests"},
        {"role": "user", "content": "pwd"},
        {"role": "assistant", "content": "<think>\nprint dir\n</think>\n\n/app"},
    ],
    [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "no thinking here"},
        {"role": "user", "content": "b"},
        {"role": "assistant", "content": "reasoning only</think>\n\n\nanswer  "},
        {"role": "assistant", "content": "second", "reasoning_content": "  why \n"},
    ],
    [
        {"role": "user", "content": TEXT},
        {"role": "assistant", "content": "", "reasoning_content": "think"},
        {"role": "tool", "content": "out 1"},
        {"role": "tool", "content": "out 2"},
        {"role": "user", "content": "<tool_response>\nx\n</tool_response>"},
        {"role": "assistant", "content": "<think>\n\n</think>\n\ndone"},
    ],
    [
        {"role": "system", "content": [{"type": "text", "text": "sys "}]},
        {"role": "user", "content": [{"type": "text", "text": "part 1, "}, {"type": "text", "text": "part 2"}]},
        {"role": "assistant", "content": None},
    ],
]


GENERATION_PROMPTS = [
    ({}, ""),
    ({"add_generation_prompt": True}, "<|im_start|>assistant\n<think>\n"),
    ({"add_generation_prompt": True, "enable_thinking": True}, "<|im_start|>assistant\n<think>\n"),
    ({"add_generation_prompt": True, "enable_thinking": False}, "<|im_start|>assistant\n<think>\n\n</think>\n\n"),
]


def _text(message: dict) -> str:
    content = message["content"]
    if isinstance(content, list):
        return "".join(part["text"] for part in content)
    return content or ""


def _last_query(messages: list[dict]) -> int:
    return max(i for i, m in enumerate(messages) if m["role"] == "user" and not _text(m).strip().startswith("<tool_response>"))


@pytest.mark.parametrize("messages", CONVERSATIONS)
@pytest.mark.parametrize("kwargs, ending", GENERATION_PROMPTS)
def test_qwen35_fixture_template_follows_the_qwen35_rules(messages, kwargs, ending):
    """The Qwen3.5 chat-template rules (docs/ARCHITECTURE.md), checked on every conversation and flag combination."""
    out = render(tiny_gguf.QWEN35_TEMPLATE, messages, **kwargs)
    body = out[: len(out) - len(ending)] if ending else out
    assert out.endswith(ending) and body.endswith("<|im_end|>\n")  # the generation prompt, exactly
    turns = body.split("<|im_start|>")[1:]
    last_query = _last_query(messages)
    # Each message opens a turn, except tool results that follow one another (they share one).
    turn_of, current = [], -1
    for index, message in enumerate(messages):
        if not (message["role"] == "tool" and index > 0 and messages[index - 1]["role"] == "tool"):
            current += 1
        turn_of.append(current)
    assert len(turns) == turn_of[-1] + 1
    for index, message in enumerate(messages):
        if message["role"] in ("system", "user"):
            # Content trimmed: `<|im_start|>ROLE\nCONTENT<|im_end|>\n`.
            assert turns[turn_of[index]] == f"{message['role']}\n{_text(message).strip()}<|im_end|>\n"
    for index, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        turn = turns[turn_of[index]]
        if index < last_query:  # before the last user query: its thinking is gone
            assert "<think>" not in turn and "</think>" not in turn
        else:  # after it: thinking kept in the canonical block
            assert turn.startswith("assistant\n<think>\n") and "\n</think>\n\n" in turn


def test_qwen35_fixture_template_exact_renderings():
    trimmed = render(tiny_gguf.QWEN35_TEMPLATE, CONVERSATIONS[1], add_generation_prompt=True, enable_thinking=False)
    assert trimmed == (
        "<|im_start|>system\nYou simulate a shell.<|im_end|>\n<|im_start|>user\nls<|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )
    history = render(tiny_gguf.QWEN35_TEMPLATE, CONVERSATIONS[2][:4], add_generation_prompt=True)
    assert history == (
        "<|im_start|>system\nYou simulate a shell.<|im_end|>\n<|im_start|>user\nls<|im_end|>\n"
        "<|im_start|>assistant\nsrc  tests<|im_end|>\n<|im_start|>user\npwd<|im_end|>\n"
        "<|im_start|>assistant\n<think>\n"
    )


def test_qwen35_template_rules():
    messages = CONVERSATIONS[2]
    out = render(tiny_gguf.QWEN35_TEMPLATE, messages, add_generation_prompt=True, enable_thinking=False)
    assert "<|im_start|>assistant\nsrc  tests<|im_end|>\n" in out  # thinking dropped before last user
    assert "<|im_start|>assistant\n<think>\nprint dir\n</think>\n\n/app<|im_end|>\n" in out
    assert out.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert render(tiny_gguf.QWEN35_TEMPLATE, messages[:2], add_generation_prompt=True).endswith(
        "<|im_start|>user\nls<|im_end|>\n<|im_start|>assistant\n<think>\n"
    )


# --- loading and running in llama.cpp -------------------------------------------------

def test_metadata_and_special_tokens(model):
    kind, llm = model
    assert llm.metadata["general.architecture"] == kind
    template = llm.metadata["tokenizer.chat_template"]
    assert template == (tiny_gguf.QWEN35_TEMPLATE if kind == "qwen35moe" else tiny_gguf.CHATML_TEMPLATE)
    ids = tiny_gguf.special_token_ids()
    for text in ("<|im_start|>", "<|im_end|>", "<think>", "</think>",
                 "<predicted_observation>", "</predicted_observation>"):
        assert llm.tokenize(text.encode(), add_bos=False, special=True) == [ids[text]]
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    assert llama_cpp.llama_vocab_is_eog(vocab, ids["<|im_end|>"])
    assert llama_cpp.llama_vocab_eos(vocab) == ids["<|im_end|>"]
    assert llm.tokenize(b"hello", add_bos=True, special=True) == llm.tokenize(b"hello", add_bos=False)


def test_merges_are_used(model):
    _, llm = model
    text = TEXT.encode()
    assert len(llm.tokenize(text, add_bos=False)) < len(text) // 2
    assert llm.detokenize(llm.tokenize(text, add_bos=False)) == text


def test_decode_and_sample(model):
    kind, llm = model
    llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(llm.ctx), True)
    tokens = prompt_tokens(llm, 50)
    logits = decode(llm, tokens)
    assert np.isfinite(logits).all() and logits.std() > 0
    rng = np.random.default_rng(0)
    for _ in range(20):  # manual sampling from the softmax
        p = np.exp(logits - logits.max())
        token = int(rng.choice(len(p), p=p / p.sum()))
        logits = decode(llm, [token])
        assert np.isfinite(logits).all()
    if kind == "qwen35moe":
        assert llama_cpp.llama_model_is_hybrid(llm.model)


def test_hybrid_partial_state_checkpoint(qwen_gguf):
    """Restore the recurrent-only state saved after A, drop B from the KV cache, replay B."""
    llm = llama_cpp.Llama(model_path=str(qwen_gguf), n_ctx=2048, verbose=False)
    try:
        ctx, partial = llm.ctx, llama_cpp.LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY
        tokens = prompt_tokens(llm, 60)
        a, b = tokens[:40], tokens[40:]
        decode(llm, a)
        size = llama_cpp.llama_state_seq_get_size_ext(ctx, 0, partial)
        assert 0 < size < llama_cpp.llama_state_seq_get_size_ext(ctx, 0, 0)  # no KV cache inside
        buf = (ctypes.c_uint8 * size)()
        assert llama_cpp.llama_state_seq_get_data_ext(ctx, buf, size, 0, partial) == size
        first = decode(llm, b)

        # Order matters: set_data first, then seq_rm (the other way round seq_rm fails).
        assert llama_cpp.llama_state_seq_set_data_ext(ctx, buf, size, 0, partial) == size
        assert llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(ctx), 0, len(a), -1)
        assert llama_cpp.llama_memory_seq_pos_max(llama_cpp.llama_get_memory(ctx), 0) == len(a) - 1
        second = decode(llm, b)
        assert np.array_equal(first, second)
    finally:
        llm.close()


def test_qwen35moe_mtp_variant_loads(tmp_path):
    path = tiny_gguf.write_qwen35moe_fixture(tmp_path / "mtp.gguf", mtp=True)
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=512, verbose=False)
    try:
        assert llm.metadata["qwen35moe.nextn_predict_layers"] == "1"
        assert np.isfinite(decode(llm, prompt_tokens(llm, 10))).all()
    finally:
        llm.close()
