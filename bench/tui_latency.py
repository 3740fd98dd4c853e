"""How the TUI keeps up while a turn streams: key-press latency and the screen's update rate.

Prints numbers measured in one run (no pass/fail), headless (Textual's test driver):

1. Key press to screen while a turn streams: scripted answers at a CPU model's pace (`--rate`
   tokens a second), or a real GGUF on the llama.cpp path (`--model PATH`; a random-weight
   fixture ends its turns early, so each press starts a new turn when needed). A character is
   pressed into the action line every `--interval` seconds; the time until the frame that
   shows it is handed to the terminal.
2. A fast token stream (the scripted backend, one character a token, no pauses): tokens
   streamed, stream messages the screen handled (the rest were coalesced), screen updates per
   second, and how long the whole turn took on screen.

    .venv/bin/python bench/tui_latency.py [--model PATH | --rate 30] [--presses 40] [--tokens 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from agentworld_local.engine.scripted import ScriptedAnswer, ScriptedBackend
from agentworld_local.tui.app import make_app
from agentworld_local.tui.session_screen import SessionScreen

SIZE = (120, 40)


async def _wait(condition, timeout_s: float = 120.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.perf_counter() + timeout_s
    while not condition():
        if time.perf_counter() > deadline:
            raise TimeoutError("the app did not get there in time")
        await asyncio.sleep(0.001)


async def _submit(pilot, text: str) -> None:  # type: ignore[no-untyped-def]
    field = pilot.app.screen.query_one("#action")
    field.value = text
    await pilot.press("enter")


def count_frames(app) -> list[float]:  # type: ignore[no-untyped-def]
    """The times at which the app hands a frame to its driver (headless: the same call, not written)."""
    frames: list[float] = []
    display = app._display

    def recording(screen, renderable) -> None:  # type: ignore[no-untyped-def]
        if renderable is not None:
            frames.append(time.perf_counter())
        display(screen, renderable)

    app._display = recording
    return frames


def press(app, key: str) -> None:  # type: ignore[no-untyped-def]
    """A key as the terminal driver delivers it (the test driver's `press` waits for an idle
    CPU, which a streaming turn never leaves, so it cannot time this)."""
    from textual import events

    event = events.Key(key, key)
    event.set_sender(app)
    app._driver.send_message(event)


def long_answer(tokens: int) -> str:
    """A realistic answer of about `tokens` one-character tokens that never repeats itself
    (the repetition rule would end a looping one early)."""
    thinking = " ".join(f"step {n}: the log grows by {n * 7 % 13} lines" for n in range(tokens // 70))
    lines = "\n".join(f"Dec  2 20:{n // 60 % 60:02d}:{n % 60:02d} host app[{1000 + n}]: request {n} served" for n in range(tokens // 60))
    return f"<think>\n{thinking}\n</think>\n<predicted_observation>\n{lines}\n</predicted_observation>"


async def key_latency(model: str | None, rate: float, presses: int, interval: float, out: Path) -> None:
    if model is None:  # a model on the CPU, at `rate` tokens a second
        backend = ScriptedBackend([ScriptedAnswer(long_answer(100_000), chunk=1)], delay_s=1 / rate, n_ctx=10_000_000)
        app = make_app(backend=backend, domain="terminal", think="full", max_tokens=10_000_000, out=out)
        model = f"scripted, {rate:g} tok/s"
    else:
        app = make_app(model=model, domain="terminal", think="full", max_tokens=100_000, ctx=16384, out=out)
    async with app.run_test(size=SIZE) as pilot:
        await _wait(lambda: isinstance(app.screen, SessionScreen) and bool(app.screen.query("#action")))
        screen = app.screen
        await _submit(pilot, "cat /var/log/syslog")
        await _wait(lambda: screen.busy == "turn" or bool(screen.session.history) or app.screen is not screen)
        if app.screen is not screen:
            print(f"key latency: {getattr(app.screen, 'message', app.screen)}")
            return
        field = screen.query_one("#action")
        field.focus()
        frames = count_frames(app)
        latencies: list[float] = []
        handling: list[float] = []
        turns = 1
        for number in range(presses):
            if screen.busy != "turn":  # a random-weight model ends early: start another turn
                if app.screen is not screen:
                    break
                done = len(screen.session.history)
                await _submit(pilot, "cat /var/log/syslog")
                await _wait(lambda: screen.busy == "turn" or len(screen.session.history) > done
                            or app.screen is not screen)
                turns += 1
                field.value = ""
                if screen.busy != "turn":
                    continue
            before = field.value
            started = time.perf_counter()
            press(app, "x")
            await _wait(lambda: field.value == before + "x")
            handled = time.perf_counter()
            await _wait(lambda: bool(frames) and frames[-1] >= handled, timeout_s=5)  # the frame that shows it
            latencies.append((frames[-1] - started) * 1000)
            handling.append((handled - started) * 1000)
            await asyncio.sleep(interval)
        screen.action_cancel_turn()
        await app.workers.wait_for_complete()
    if not latencies:
        print("key latency: the turn ended before the first key press; use a larger model")
        return
    latencies.sort()
    p95 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.95))]
    print(f"key press -> screen while a turn streams ({model}): {len(latencies)} presses, "
          f"median {statistics.median(latencies):.1f} ms, p95 {p95:.1f} ms, max {latencies[-1]:.1f} ms"
          f" over {turns} turn(s); the key itself handled after "
          f"median {statistics.median(handling):.1f} ms")


async def stream_rate(tokens: int, out: Path) -> None:
    raw = long_answer(tokens)
    backend = ScriptedBackend([ScriptedAnswer(raw, chunk=1)], n_ctx=10_000_000)
    handled = 0
    original = SessionScreen.on_stream_updated

    def counting(self, message):  # type: ignore[no-untyped-def]
        nonlocal handled
        handled += 1
        original(self, message)

    SessionScreen.on_stream_updated = counting  # type: ignore[method-assign]
    try:
        app = make_app(backend=backend, domain="terminal", think="full", max_tokens=10_000_000, out=out)
        async with app.run_test(size=SIZE) as pilot:
            await _wait(lambda: bool(app.screen.query("#action")))
            frames = count_frames(app)
            started = time.perf_counter()
            await _submit(pilot, "cat /var/log/syslog")
            await app.workers.wait_for_complete()
            await pilot.pause()
            elapsed = time.perf_counter() - started
            drawn = len([frame for frame in frames if frame >= started])
            saved = len(app.screen.session.history) == 1
    finally:
        SessionScreen.on_stream_updated = original  # type: ignore[method-assign]
    print(f"fast stream: {len(raw):,} one-character tokens in {elapsed:.2f} s ({len(raw) / elapsed:,.0f} tok/s); "
          f"the screen handled {handled:,} stream updates ({handled / elapsed:.0f}/s, "
          f"{len(raw) / max(handled, 1):.1f} tokens each; the rest were coalesced), {drawn} frames "
          f"({drawn / elapsed:.0f} frames/s); turn saved: {saved}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a GGUF to stream from on the CPU (default: scripted answers at --rate)")
    parser.add_argument("--rate", type=float, default=30.0, help="tokens a second of the scripted stream (the real model on a CPU: about 30)")
    parser.add_argument("--presses", type=int, default=40)
    parser.add_argument("--interval", type=float, default=0.05, help="seconds between key presses")
    parser.add_argument("--tokens", type=int, default=20000, help="tokens in the fast stream")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(key_latency(args.model, args.rate, args.presses, args.interval, Path(folder) / "latency.jsonl"))
        asyncio.run(stream_rate(args.tokens, Path(folder) / "stream.jsonl"))


if __name__ == "__main__":
    main()
