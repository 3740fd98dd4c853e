"""Realistic raw answers, as a world model writes them, for tests of every face.

Each names the observation that must be shown and recorded for it with thinking on (the
default): the stream shown on screen and the saved turn must both equal `observation`.
`ANSWERS` keeps them in a stable order; `answer("name")` picks one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from agentworld_local.engine.scripted import ANSWER_FILE_VERSION, ScriptedAnswer
from agentworld_local.files import writing_whole


@dataclass(frozen=True)
class RealisticAnswer:
    name: str
    raw: str
    observation: str
    #: parse_output's `method` for this answer with thinking on.
    method: str
    #: How the scripted answer ends when its text runs out (a loop still ends with `repetition`).
    finish: str = "stop"
    #: Explicit split points for the case the answer exists to show (else small chunks).
    splits: tuple[int, ...] | None = None
    #: More than one observation block after thinking: the llama backend stops after the
    #: first, so streaming all of it needs `ScriptedBackend(stop_after_observation=False)`.
    several_blocks: bool = False

    def scripted(self, chunk: int = 3) -> ScriptedAnswer:
        return ScriptedAnswer(self.raw, chunk=chunk, splits=self.splits, finish=self.finish)


_LS = (
    "total 12\n"
    "drwxr-xr-x 3 root root 4096 Mar  4 09:12 .\n"
    "drwxr-xr-x 1 root root 4096 Mar  4 09:10 ..\n"
    "-rw-r--r-- 1 root root  220 Mar  4 09:12 README.md\n"
    "drwxr-xr-x 2 root root 4096 Mar  4 09:12 src\n"
    "root@sandbox:/app# "
)

_NEWLINE_ALONE = "<think>\nEmpty file.\n</think>\n<predicted_observation>\n\nroot@sandbox:/app# \n</predicted_observation>"

ANSWERS: tuple[RealisticAnswer, ...] = (
    RealisticAnswer(
        "thinking_then_tags",
        "<think>\nThe agent lists /app. The repository was cloned there with a README and a src "
        "directory, so `ls -la` shows both, then the prompt.\n</think>\n"
        f"<predicted_observation>\n{_LS}\n</predicted_observation>",
        _LS,
        "tag",
    ),
    RealisticAnswer(
        "marker_form",
        "<think>\npwd prints the working directory.\n</think>\n\n**Environment Observation:**\n/app\nroot@sandbox:/app# \n",
        "/app\nroot@sandbox:/app#",
        "marker",
    ),
    RealisticAnswer(
        "no_tags",
        "bash: gti: command not found\nroot@sandbox:/app# ",
        "bash: gti: command not found\nroot@sandbox:/app#",
        "cleaned",
    ),
    RealisticAnswer(
        "two_blocks",
        "<think>\ncat notes.txt\n</think>\n<predicted_observation>\ncat: notes.txt: No such file or directory\n"
        "</predicted_observation>\nOn second thought the agent created it in turn 2.\n"
        "<predicted_observation>\nbuy milk\ncall Ana\n</predicted_observation>",
        "buy milk\ncall Ana",
        "tag",
        several_blocks=True,
    ),
    RealisticAnswer(
        "tags_split_across_chunks",
        '<think>\nA search for the release date.\n</think>\n<predicted_observation>\n{"results": [{"title": '
        '"Release notes 2.4", "url": "https://example.org/2.4", "snippet": "Released on 12 May."}]}\n'
        "</predicted_observation>",
        '{"results": [{"title": "Release notes 2.4", "url": "https://example.org/2.4", "snippet": "Released on 12 May."}]}',
        "tag",
        # Cuts inside `</think>`, `<predicted_observation>` and `</predicted_observation>`.
        splits=(38, 44, 55, 60, 78, 180, 190),
    ),
    RealisticAnswer(
        "newline_alone_in_a_chunk",
        _NEWLINE_ALONE,
        "root@sandbox:/app# ",  # blank lines around a block's text are not part of it
        "tag",
        splits=tuple(sorted({i + d for i, c in enumerate(_NEWLINE_ALONE) if c == "\n" for d in (0, 1)})),
    ),
    RealisticAnswer(
        "unclosed_tag_at_length",
        "<think>\nA long build log.\n</think>\n<predicted_observation>\n[1/3] Compiling util.c\n[2/3] Compiling main.c\n",
        "[1/3] Compiling util.c\n[2/3] Compiling main.c",
        "tag-unclosed",
        finish="length",
    ),
    RealisticAnswer(
        "draft_tags_inside_thinking",
        "<think>\nFirst idea: <predicted_observation>\nPermission denied\n</predicted_observation> but the agent "
        "is root, so the write works.\n</think>\n<predicted_observation>\nroot@sandbox:/app# \n</predicted_observation>",
        "root@sandbox:/app# ",
        "tag",
    ),
    RealisticAnswer(
        "empty_observation",
        "<think>\n`touch a` prints nothing.\n</think>\n<predicted_observation>\n</predicted_observation>",
        "",
        "tag",
    ),
    RealisticAnswer(
        "ansi_colour_screen",
        "<think>\nls --color=always colours directories blue.\n</think>\n<predicted_observation>\n"
        "\x1b[0m\x1b[01;34msrc\x1b[0m  README.md  \x1b[01;32mrun.sh\x1b[0m\nroot@sandbox:/app# \n</predicted_observation>",
        "\x1b[0m\x1b[01;34msrc\x1b[0m  README.md  \x1b[01;32mrun.sh\x1b[0m\nroot@sandbox:/app# ",
        "tag",
    ),
    RealisticAnswer(
        "control_bytes_screen",
        "<think>\nThe program rings the bell and sets the window title.\n</think>\n<predicted_observation>\n"
        "\x1b]0;evil title\x07\x1b[2Jdone\x00\nroot@sandbox:/app# \n</predicted_observation>",
        "\x1b]0;evil title\x07\x1b[2Jdone\x00\nroot@sandbox:/app# ",
        "tag",
    ),
    RealisticAnswer(
        "mcp_tool_result",
        '<think>\nget_file_info returns its own JSON result, no envelope; README.md was written at 09:12.\n</think>\n\n<predicted_observation>\n'
        '{"path": "README.md", "type": "file", "size": 220, "modified": "2024-03-04T09:12:31Z", "permissions": "rw-r--r--"}\n'
        "</predicted_observation>\n",
        '{"path": "README.md", "type": "file", "size": 220, "modified": "2024-03-04T09:12:31Z", "permissions": "rw-r--r--"}',
        "tag",
    ),
    RealisticAnswer(
        "indented_first_line",
        "<think>\nA Python traceback.\n</think>\n<predicted_observation>\n  File \"main.py\", line 3\n"
        "    print(x\n         ^\nSyntaxError: '(' was never closed\n</predicted_observation>",
        "  File \"main.py\", line 3\n    print(x\n         ^\nSyntaxError: '(' was never closed",
        "tag",
    ),
    RealisticAnswer(
        "unclosed_thinking_at_length",
        "<think>\nThe agent runs make. Let me think about which targets exist and what the compiler prints",
        "",
        "unclosed-think",
        finish="length",
    ),
    RealisticAnswer(
        "newline_loop",
        "<think>\nThe screen after clear.\n</think>\n<predicted_observation>\n" + "\n" * 4096,
        "",
        "tag-unclosed",
        finish="length",
    ),
)


def answer(name: str) -> RealisticAnswer:
    for item in ANSWERS:
        if item.name == name:
            return item
    raise KeyError(name)


def write_answer_file(path: Path, answers: Iterable[RealisticAnswer], *, chunk: int = 3, delay_s: float = 0.0) -> Path:
    """An answer file for `--model scripted:FILE` (a face started as its own process) with
    these answers, cut into `chunk`-character pieces, `delay_s` seconds after each."""
    items = [{"raw": item.raw, "chunk": chunk, "finish": item.finish} for item in answers]
    with writing_whole(path, overwrite=True) as handle:
        handle.write(json.dumps({"version": ANSWER_FILE_VERSION, "answers": items, "delay_s": delay_s}).encode("utf-8"))
    return path

