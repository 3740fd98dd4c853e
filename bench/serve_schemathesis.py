"""Schemathesis against `awl serve`: every route of the OpenAPI document, `--checks all`, a
few examples each, on a live server on 127.0.0.1 over the scripted backend (no model) with a reward. It
runs clean when every answer is the status and shape the document says: no 5xx, no status
the document leaves out, an error body `{"error", "hint"}` for each refusal. `--openenv` runs
it against `awl serve --openenv` instead (OpenEnv's routes; a refusal is `{"detail"}`).

    .venv/bin/python bench/serve_schemathesis.py [--openenv] [--max-examples 8] [--seed 1]

Needs the `test` extra (schemathesis). Exit status: schemathesis's (0: clean).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from agentworld_local.testing import ScriptedBackend  # noqa: E402
from agentworld_local.testing.answers import ANSWERS  # noqa: E402
from tests.serve.helpers import served  # noqa: E402


#: A request the schema allows may still be refused with 400 for a rule across fields that no
#: JSON schema says (a `domain` other than its scenario's); every other check is as shipped.
_CONFIG = """
[checks.positive_data_acceptance]
expected-statuses = ["2xx", "400", "401", "403", "404", "409", "429"]
"""


def _nothing_earned(*args: object, **kwargs: object) -> float:
    """A reward, so that a session asking for one (`reward: true`) is served."""
    return 0.0


@contextlib.contextmanager
def _rest_app(folder: Path, backend: ScriptedBackend) -> Iterator[str]:
    with served(folder, backend, reward=_nothing_earned) as client:
        yield str(client.base_url).rstrip("/")


def run(max_examples: int = 8, seed: int = 1, timeout_s: float = 540, *, openenv: bool = False,
        output: Any = None) -> int:
    """Schemathesis's exit status against a server in this process (`output`: where its report goes)."""
    command = shutil.which("schemathesis", path=str(Path(sys.executable).parent)) or "schemathesis"
    backend = ScriptedBackend([item.scripted(8) for item in ANSWERS if not item.several_blocks])
    if openenv:
        from tests.serve.test_openenv import openenv_served

        app = functools.partial(openenv_served, reward=_nothing_earned)
    else:
        app = _rest_app
    with tempfile.TemporaryDirectory() as folder, app(Path(folder) / "sessions", backend) as url:
        schema = f"{url}/openapi.json"
        config = Path(folder) / "schemathesis.toml"
        config.write_text(_CONFIG)
        done = subprocess.run([command, "--config-file", str(config), "run", schema, "--checks", "all", "--max-examples", str(max_examples),
                               "--seed", str(seed), "--workers", "1", "--no-color",
                               "--generation-database", "none", "--request-timeout", "30"],
                              timeout=timeout_s, check=False, stdout=output, stderr=subprocess.STDOUT if output else None)
        return done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-examples", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--openenv", action="store_true", help="Check `awl serve --openenv`'s app instead.")
    options = parser.parse_args()
    raise SystemExit(run(options.max_examples, options.seed, openenv=options.openenv))


if __name__ == "__main__":
    main()
