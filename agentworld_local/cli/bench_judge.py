"""`awl bench judge` and `awl bench score`: the official judge step and scoring over a
predictions file, against any OpenAI-compatible judge server."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from agentworld_local.agentworldbench.judge import JUDGE_FAILED, JudgePrompts, Judged, domain_of, judge_row
from agentworld_local.agentworldbench.judge_wording import load_wording
from agentworld_local.agentworldbench.judged import SIDE, JudgedFile, side_record
from agentworld_local.agentworldbench.rows import BenchFile
from agentworld_local.agentworldbench.score import COLUMNS, aggregate, has_verdicts, invalid
from agentworld_local.cli.agentworldbench import bench_app
from agentworld_local.cli.consoles import stderr_console
from agentworld_local.cli.interrupts import exit_code
from agentworld_local.cli.model_options import check_concurrency
from agentworld_local.concurrency import map_at_once
from agentworld_local.engine.remote.options import DEFAULT_RETRIES, DEFAULT_TIMEOUT_S, RemoteOptions
from agentworld_local.errors import AwlError, Cancelled, InputError
from agentworld_local.files import fit_name, user_path_option
from agentworld_local.terminal_text import safe_for_terminal

#: The official judge's sampling.
JUDGE_TEMPERATURE = 0.6
JUDGE_MAX_TOKENS = 32768
JUDGE_ATTEMPTS = 3
DISPLAY = {"mcp": "MCP", "swe": "SWE", "os": "OS"}


def _rows(path: Path, what: str) -> dict[int, dict[str, Any]]:
    """Line -> row (a JSON object) of a JSONL file; InputError naming the first line that is not one."""
    bench = BenchFile(path)
    rows = {}
    for line in bench.lines():
        data = bench.data(line)
        if not isinstance(data, dict):
            raise InputError(f"{path} line {line} is not a JSON object, so not a {what} row.",
                             f"Give a {what} file: one JSON object per line.")
        rows[line] = data
    return rows


@bench_app.command("judge")
def bench_judge(
    predictions: Path = typer.Argument(..., metavar="PREDICTIONS", help="A predictions file (awl bench predict's, or the official eval.py infer's).", show_default=False, callback=user_path_option),
    judge_base_url: str = typer.Option(..., "--judge-base-url", help="The judge server's API root (any OpenAI-compatible one), e.g. http://127.0.0.1:8000/v1.", show_default=False),
    judge_model: str = typer.Option(..., "--judge-model", help="The judge model's name on that server.", show_default=False),
    prompts: Path = typer.Option(..., "--prompts", help="A prompt pack in the official layout: <domain>/judge_system_prompt.txt for each domain judged (awl ships none). The prompts/ folder of an official checkout gives the official user message too.", show_default=False, callback=user_path_option),
    out: Path = typer.Option(None, "--out", "-o", help="The judged file (default: PREDICTIONS with .judged.jsonl); run again with the same one to go on after an interruption.", show_default=False, callback=user_path_option),
    concurrency: int = typer.Option(4, "--concurrency", help="Rows judged at once."),
    judge_api_key_env: str = typer.Option(None, "--judge-api-key-env", help="The environment variable holding the judge server's key (default: OPENAI_API_KEY if set). The key is never written anywhere.", show_default=False),
    temperature: float = typer.Option(JUDGE_TEMPERATURE, "--temperature", help="The judge's sampling temperature (the official evaluation's)."),
    max_tokens: int = typer.Option(JUDGE_MAX_TOKENS, "--max-tokens", help="Most tokens for one verdict (the official evaluation's)."),
    attempts: int = typer.Option(JUDGE_ATTEMPTS, "--attempts", help="Tries per row before it is failed: a request that fails (after --retries) and a verdict that cannot be read each take one (the official evaluation's)."),
    timeout: float = typer.Option(DEFAULT_TIMEOUT_S, "--timeout", help="Seconds to wait for one verdict."),
    retries: int = typer.Option(DEFAULT_RETRIES, "--retries", help="Retries with backoff after a connection error, 429 or 5xx, within one try."),
    retry_failed: bool = typer.Option(False, "--retry-failed", help="Judge again the rows of --out whose judging failed (without it a rerun keeps them: they are results, as in the official run)."),
    drop_negative: bool = typer.Option(False, "--drop-negative-scores", help="Read a negative score as no score (not averaged). Off by default: kept, as the official parser keeps it."),
    as_json: bool = typer.Option(False, "--json", help="Print the scores as JSON at the end."),
) -> None:
    """Score a predictions file with a judge model, as the official evaluation does.

    Each row gets the domain's judge prompt from --prompts, and the judge's verdict (five dimensions, 1 to 5) is added to it. A row whose judging keeps failing is written failed, with the reason, and the run goes on. Rows are saved as they finish, and the file is put in the predictions' order at the end; run the same command again to go on after an interruption: judged rows are not judged again. Then `awl bench score JUDGED` prints the table (this command prints it too).

    Example: `awl bench judge predictions.jsonl --judge-base-url http://127.0.0.1:8001/v1 --judge-model judge --prompts ~/Qwen-AgentWorld/prompts`
    """
    if attempts < 1:
        raise InputError(f"--attempts {attempts} must be at least 1.", "E.g. `--attempts 3`.")
    remote = RemoteOptions(judge_base_url, judge_model, api_key_env=judge_api_key_env, timeout_s=timeout, retries=retries)
    check_concurrency(concurrency, remote)
    rows = _rows(predictions, "predictions")
    out = out or predictions.with_name(fit_name(predictions.stem, ".judged.jsonl"))
    wording = load_wording(JudgePrompts.checked_pack(prompts))
    judge = {"model": judge_model, "endpoint": remote.endpoint, "user_message": wording.kind,
             "drop_negative_scores": drop_negative}
    judged = JudgedFile.open(out, judge, source=predictions, retry_failed=retry_failed)
    err = stderr_console()
    if judged.cut_bytes:
        err.print(f"awl: {out} ended in an unfinished line (cut off); its row is judged again.", markup=False)
    if judged.retried:
        err.print(f"awl: {judged.retried} {'row' if judged.retried == 1 else 'rows'} whose judging failed "
                  f"{'is' if judged.retried == 1 else 'are'} judged again (--retry-failed).", markup=False)
    todo = [line for line in rows if line not in judged.done]
    needed = {domain_of(rows[line]) for line in todo if rows[line].get("gen")}
    pack = JudgePrompts.load(prompts, needed, wording)  # every missing prompt is named before any request
    if not todo:
        err.print(f"awl: every row of {predictions} is already judged in {out}.", markup=False)
        judged.in_input_order()
    elif judged.done:
        err.print(f"awl: going on in {out}: {len(judged.done)} rows judged, {len(todo)} to go.", markup=False)
    failed = None
    if todo:
        failed = _judge_all(rows, todo, judged, pack, remote, judge, concurrency=concurrency, attempts=attempts,
                            temperature=temperature, max_tokens=max_tokens, needs_server=bool(needed),
                            drop_negative=drop_negative)
    judged_by_line = _rows(out, "judged") if out.exists() else {}
    judged_rows = list(judged_by_line.values())
    kept = sum(row.get("error_message") == JUDGE_FAILED for row in judged_rows)
    if not todo and kept:
        err.print(f"awl: {kept} {'row' if kept == 1 else 'rows'} of {out} failed their judging; --retry-failed judges "
                  f"{'it' if kept == 1 else 'them'} again.", markup=False)
    _say_invalid(out, judged_by_line)
    _show(aggregate(judged_rows), as_json=as_json)
    if failed:
        raise typer.Exit(1)


def _judge_all(rows: dict[int, dict[str, Any]], todo: list[int], judged: JudgedFile, pack: JudgePrompts,
               remote: RemoteOptions, judge: dict[str, Any], *, concurrency: int, attempts: int,
               temperature: float, max_tokens: int, needs_server: bool, drop_negative: bool) -> bool:
    """Judge `todo` (lines of `rows`), `concurrency` at once, appending each verdict as it comes,
    then put the file in order and say what failed; True when the run should exit 1."""
    from agentworld_local.engine.remote.chat import ChatClient

    client = ChatClient(remote) if needs_server else None
    err = stderr_console()
    err.print(f"awl: {pack.wording.notice()}", markup=False, style="dim")
    stop = threading.Event()

    def ask(messages: list[dict[str, str]]) -> str:
        if stop.is_set():
            raise Cancelled("The judge run is stopping.", "")  # no new request once it ends
        assert client is not None
        return client.complete(messages, temperature=temperature, max_tokens=max_tokens)

    def one(line: int) -> tuple[int, Judged]:
        result = judge_row(rows[line], ask, pack, attempts=attempts, drop_negative=drop_negative)
        result.row[SIDE] = side_record(line, judge)
        return line, result

    failures = _Failures()

    def keep(line: int, result: Judged) -> None:
        judged.append(result.row)
        failures.count(line, result)

    running = map_at_once(one, todo, at_once=concurrency, stop=stop, name="awl-judge")
    try:
        try:
            for finished in running:
                keep(*finished.result())  # a server that fails every row alike ends the run; the verdicts before it are saved
        finally:
            stop.set()
            if client is not None:
                client.close()  # requests in flight end now instead of running to their timeout
            try:
                for late in running.close():  # verdicts that came while stopping are saved too
                    if late.error is None and late.value[1].failure != "request":  # the stop failed those, not the judge
                        keep(*late.value)
            finally:
                judged.close()
    except KeyboardInterrupt as interrupt:
        err.print(f"\nawl: interrupted; {failures.done} new verdicts are saved in {judged.path}. Run the same command again to go on.",
                  markup=False)
        raise typer.Exit(exit_code(interrupt)) from None
    except AwlError as error:
        error.message = f"{error.message.rstrip('.')}. {failures.done} new verdicts are saved in {judged.path}; the same command goes on after them."
        raise
    judged.in_input_order()
    err.print(f"awl: judged {failures.done} rows ({failures.failed} failed) into {judged.path}.", markup=False)
    for text in failures.lines():
        err.print(f"awl: {text}", markup=False)
    return bool(failures.requests) or (failures.done > 0 and failures.failed == failures.done)


class _Failures:
    """This run's failed rows, counted by reason, for the lines that end it."""

    #: Reasons shown, most frequent first.
    SHOWN = 3

    def __init__(self) -> None:
        self.done = self.failed = self.requests = 0
        self.by_reason: dict[str, list[int]] = {}

    def count(self, line: int, result: Judged) -> None:
        self.done += 1
        if result.failure is not None:
            self.failed += 1
            self.requests += result.failure == "request"
            self.by_reason.setdefault(result.reason, []).append(line)

    def lines(self) -> list[str]:
        ranked = sorted(self.by_reason.items(), key=lambda item: -len(item[1]))
        out = []
        for reason, lines in ranked[: self.SHOWN]:
            shown = ", ".join(str(line) for line in sorted(lines)[:10]) + (" ..." if len(lines) > 10 else "")
            out.append(f"{len(lines)} {'row' if len(lines) == 1 else 'rows'} failed: {safe_for_terminal(reason)} "
                       f"({'line' if len(lines) == 1 else 'lines'} {shown})")
        if len(ranked) > self.SHOWN:
            out.append(f"... and {len(ranked) - self.SHOWN} other reasons; each failed row says its own in `judge_problem` "
                       "or `error_message`.")
        if self.requests:
            out.append(f"{self.requests} {'row' if self.requests == 1 else 'rows'} failed because the judge's request kept "
                       "failing; once the judge works, run the same command with --retry-failed to judge them again.")
        return out


def _show(summary: dict[str, Any], *, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    # No vertical rules: the eight columns fit 80 columns (a pipe, a small terminal) uncut.
    table = Table(title="AgentWorldBench scores (0-100)", title_justify="left", box=box.SIMPLE_HEAD, show_edge=False,
                  pad_edge=False, collapse_padding=True)
    table.add_column("domain")
    table.add_column("valid/rows", justify="right")
    for column in COLUMNS:
        table.add_column("total" if column == "total_score" else column, justify="right")
    for name, entry in summary["domains"].items():
        cells = ["-" if entry["scores"][c] is None else f"{entry['scores'][c]:.2f}" for c in COLUMNS]
        # The domain is a row's text: escaped (control characters, ANSI, lone surrogates) and never markup.
        shown = Text(safe_for_terminal(DISPLAY.get(name, name.capitalize()), keep_colour=False))
        table.add_row(shown, f"{entry['valid']}/{entry['rows']}", *cells)
    console = Console()
    console.print(table)
    overall = "-" if summary["overall"] is None else f"{summary['overall']:.2f}"
    unscored = f", invalid: {summary['invalid']}" if summary["invalid"] else ""
    console.print(f"Overall: {overall}   rows: {summary['rows']}, valid: {summary['valid']}, failed: {summary['failed']}{unscored}")


def _say_invalid(path: Path, rows: dict[int, dict[str, Any]]) -> None:
    """Name the rows left out for a score that is not a finite number (on stderr: --json's stdout stays JSON)."""
    lines = [line for line, row in rows.items() if invalid(row)]
    if not lines:
        return
    one = len(lines) == 1
    shown = ", ".join(str(line) for line in lines[:10]) + (" ..." if len(lines) > 10 else "")
    stderr_console().print(
        f"awl: {len(lines)} {'row' if one else 'rows'} of {path} {'has' if one else 'have'} a score that is not a finite "
        f"number (NaN or infinity) and {'is' if one else 'are'} left out of the scores as invalid "
        f"({'line' if one else 'lines'} {shown}); correct {'its' if one else 'their'} scores in the file, or judge "
        f"{'it' if one else 'them'} again.", markup=False)


@bench_app.command("score")
def bench_score(
    judged: Path = typer.Argument(..., metavar="JUDGED", help="A judged file (awl bench judge's, or the official eval.py judge's).", show_default=False, callback=user_path_option),
    as_json: bool = typer.Option(False, "--json", help="The scores as JSON, for programs."),
) -> None:
    """Aggregate a judged file per domain and overall, as the official scoring does.

    Five dimensions (format, factuality, consistency, realism, quality) and the total, each a mean over the valid rows of 1-5 verdicts normalised to 0-100; failed rows are counted, not scored.

    Example: `awl bench score predictions.judged.jsonl --json`
    """
    by_line = _rows(judged, "judged")
    rows = list(by_line.values())
    if not has_verdicts(rows):
        raise InputError(f"{judged} holds no verdicts: none of its {len(rows)} rows has been judged (no `failed` field).",
                         f"Run `awl bench judge {judged} --judge-base-url URL --judge-model NAME --prompts DIR` first, "
                         "then score the file it writes.")
    _say_invalid(judged, by_line)
    _show(aggregate(rows), as_json=as_json)
