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
def qwen_gguf() -> Path:
    """Tiny random-weight `qwen35moe` GGUF (hybrid DeltaNet/attention, MoE, Qwen3.5 template)."""
    return ensure_fixture("qwen35moe", GGUF_CACHE)
