"""One line per domain: the friendly and raw action forms, for `awl run --help` and docs.

Pure data, so that a help screen can show it without importing the domain modules. A
test parses every example here with its domain's default setup, so a form listed here
is a form that works.
"""

from __future__ import annotations

# domain: (friendly examples, raw example, a few words about the raw form)
ACTION_FORMS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "terminal": (
        ("ls -la", "C-c"),
        '[{"keystrokes": "ls -la\\n", "duration": 1.0}]',
        "JSON keystrokes",
    ),
    "swe": (
        ("bash ls -la", "read_file path=src/app.py"),
        '{"name": "run_shell_command", "arguments": {"command": "ls -la"}}',
        "a JSON tool call",
    ),
    "mcp": (
        ("read_file path=README.md", "list_directory ."),
        '{"name": "read_file", "arguments": {"path": "README.md"}}',
        "a JSON tool call",
    ),
    "search": (
        ('search "ramen in Osaka"', "open example.com", "memory add city Osaka"),
        '{"name": "web_search", "arguments": {"query": "ramen in Osaka"}}',
        "a JSON tool call",
    ),
    "web": (
        ("click 12", 'fill 5 "hello"', "click 200 300"),
        "click('12')",
        "a BrowserGym call",
    ),
    "os": (
        ("click 200 300", 'type "hello"'),
        "pyautogui.click(200, 300)",
        "Python, never run",
    ),
    "android": (
        ("tap 540 1200", "back"),
        '{"action_type": "click", "x": 540, "y": 1200}',
        "a JSON UI action",
    ),
}


def action_forms_summary() -> list[str]:
    """One line per domain, e.g. `web       click 12, fill 5 "hello"; raw (a BrowserGym call): click('12')`."""
    width = max(map(len, ACTION_FORMS))
    return [
        f"{name.ljust(width)}  {', '.join(friendly)}; raw ({words}): {raw}"
        for name, (friendly, raw, words) in ACTION_FORMS.items()
    ]


def session_action_examples(domain: object) -> tuple[str, ...]:
    """Friendly examples for a domain as built for one session: a tool-call domain names only
    the tools that session has (a scenario may bring its own server); others, ACTION_FORMS's."""
    examples = getattr(domain, "example_actions", None)
    if examples is not None:
        return tuple(examples())
    return ACTION_FORMS.get(getattr(domain, "name", ""), ((), "", ""))[0]
