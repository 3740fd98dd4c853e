"""Loading a GGUF on the real llama.cpp path: nothing printed, notices handed over, Ctrl+C stops it.

A full-screen UI shares the terminal with the load, so the backend writes nothing to
stdout or stderr: what the user should read comes through `notice` (or stays in
`backend.notices`), the load's fraction through `progress`.
"""

from __future__ import annotations

import os
import signal

import pytest

from agentworld_local.engine.llama import LlamaBackend, vocab_check


def test_a_load_without_a_notice_callback_prints_nothing_and_keeps_the_notices(llama_gguf, capfd):
    backend = LlamaBackend(llama_gguf, n_ctx=512, gpu_layers=0)  # a layer count given: the memory estimate is said
    try:
        out, err = capfd.readouterr()
        assert (out, err) == ("", "")
        assert len(backend.notices) == 1
        assert backend.notices[0].startswith("memory estimate for a 512-token context on the CPU")
    finally:
        backend.close()


def test_notices_and_progress_go_to_the_callbacks(llama_gguf, capfd):
    notices: list[str] = []
    fractions: list[float] = []
    backend = LlamaBackend(llama_gguf, n_ctx=512, gpu_layers=0, notice=notices.append, progress=fractions.append)
    try:
        assert notices == backend.notices and notices[0].startswith("memory estimate")
        assert fractions and fractions[-1] == pytest.approx(1.0)
        assert capfd.readouterr() == ("", "")
    finally:
        backend.close()


def test_verbose_hands_llama_cpps_log_to_the_notice_callback_line_by_line(llama_gguf, capfd):
    notices: list[str] = []
    backend = LlamaBackend(llama_gguf, n_ctx=512, gpu_layers=0, notice=notices.append, verbose=True)
    try:
        log_lines = [text for text in notices if text.startswith("llama.cpp: ")]
        assert any("llama_context" in text for text in log_lines)
        assert all("\n" not in text for text in notices)
        assert capfd.readouterr() == ("", "")
    finally:
        backend.close()
    seen = len(notices)
    vocab_check.__globals__["_vocab_check"].cache_clear()  # read the header again, not the remembered answer
    assert vocab_check(llama_gguf).known_architecture  # llama.cpp logs while it reads the header
    assert len(notices) == seen  # a closed backend hears no more of llama.cpp's log


def test_ctrl_c_during_the_load_stops_it_through_the_progress_callback(llama_gguf):
    before = signal.getsignal(signal.SIGINT)

    def press_ctrl_c(fraction: float) -> None:
        os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        LlamaBackend(llama_gguf, n_ctx=512, gpu_layers=0, progress=press_ctrl_c)
    assert signal.getsignal(signal.SIGINT) is before
    backend = LlamaBackend(llama_gguf, n_ctx=512, gpu_layers=0)  # the next load is not affected
    backend.close()


def test_the_model_info_says_how_many_layers_really_run_on_a_gpu(llama_gguf):
    """`--gpu-layers all` is llama.cpp's -1; a CPU-only build offloads nothing, so it reports 0
    (the status bar then says CPU, never "GPU -1 layers")."""
    import llama_cpp

    backend = LlamaBackend(llama_gguf, n_ctx=512, gpu_layers="all")
    try:
        assert backend.info.gpu_layers == (-1 if llama_cpp.llama_supports_gpu_offload() else 0)
    finally:
        backend.close()
