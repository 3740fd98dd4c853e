"""The search domain: web search, page extraction and a key/value memory, simulated."""

from __future__ import annotations

from typing import Any

from agentworld_local.domains.prompting import PromptSpec, compose_prompt
from agentworld_local.domains.syntax import normalize_url, split_words
from agentworld_local.domains.tools import Shortcut, ToolCallDomain, tools_json
from agentworld_local.errors import ActionError

#: The goal `open URL` sends when none is given.
DEFAULT_GOAL = "Extract the main content of the page."

SEARCH_TOOLS: list[dict[str, Any]] = [
    {
        "name": "web_search",
        "description": "Search the web; returns a ranked list of results with title, URL, date and snippet.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "The search query."},
                "num_results": {"type": "integer", "description": "How many results to return (default 10)."},
            },
            "required": ["query"],
        },
    },
    {
        "name": "web_extractor",
        "description": "Open a URL and extract the information relevant to a goal, as Markdown.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "The page to open."},
                "goal": {"type": "string", "description": "What to look for on the page."},
            },
            "required": ["url", "goal"],
        },
    },
    {
        "name": "dict_memory",
        "description": "A key/value notebook that persists across the session: set, get, delete or list keys.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["set", "get", "delete", "list"]},
                "key": {"type": "string"},
                "value": {"type": "string"},
            },
            "required": ["action"],
        },
    },
]

DEFAULT_INITIAL_STATE = """\
A search for 'ramen osaka' returned 4 results:

1. [The 12 Best Ramen Shops in Osaka (2025 Guide)](https://www.osakafoodguide.com/best-ramen-osaka)
   Date published: 2025-02-11
   From tonkotsu in Namba to niboshi in Umeda: where locals queue, opening hours and prices.
2. [Ramen in Osaka - Tabelog Ranking](https://tabelog.com/en/osaka/rstLst/ramen/)
   Ranking of ramen restaurants in Osaka by user ratings, with reviews and photos.
3. [Kinryu Ramen Dotonbori - Menu and Hours](https://kinryu-ramen.example.jp/dotonbori)
   Open 24 hours. Tonkotsu ramen 800 yen, chashu ramen 1,100 yen. Free kimchi and garlic.
4. [r/JapanTravel: Osaka ramen recommendations?](https://www.reddit.com/r/JapanTravel/comments/1b2k9q/osaka_ramen/)
   Date published: 2024-11-03
   Skip the tourist spots; try Menya Joroku near Namba or Jinrui Mina Menrui near Nishinakajima.

Memory: empty.
"""


class SearchDomain(ToolCallDomain):
    name = "search"
    title = "Web search and page extraction"
    state_lexer = "markdown"
    default_tools = SEARCH_TOOLS
    friendly_examples = ['search "best ramen in Osaka"', "open https://example.com/menu", "memory set city Osaka"]

    def shortcuts(self) -> dict[str, Shortcut]:
        return {"search": self._search, "open": self._open, "visit": self._open, "memory": self._memory}

    def _need(self, tool: str) -> None:
        if tool not in self._by_name:
            raise ActionError(f"This session has no `{tool}` tool.", self.action_help())

    def _search(self, rest: str) -> tuple[str, dict[str, Any]]:
        self._need("web_search")
        if not rest:
            raise ActionError("`search` needs a query, e.g. `search \"best ramen in Osaka\"`.", self.action_help())
        return "web_search", self.friendly_arguments(self._by_name["web_search"], rest)

    def _open(self, rest: str) -> tuple[str, dict[str, Any]]:
        self._need("web_extractor")
        url, _, goal = rest.partition(" ")
        if not url:
            raise ActionError("`open` needs a URL, e.g. `open https://example.com \"opening hours\"`.", self.action_help())
        goal = " ".join(split_words(goal, self.action_help())) if goal.strip() else DEFAULT_GOAL
        return "web_extractor", {"url": normalize_url(url), "goal": goal}

    def _memory(self, rest: str) -> tuple[str, dict[str, Any]]:
        self._need("dict_memory")
        words = split_words(rest, self.action_help())
        shapes = {"set": 3, "get": 2, "delete": 2, "list": 1}
        if not words or words[0] not in shapes or len(words) < shapes[words[0]]:
            raise ActionError(
                "Use `memory set KEY VALUE`, `memory get KEY`, `memory delete KEY` or `memory list`.",
                self.action_help(),
            )
        action, arguments = words[0], {"action": words[0]}
        if action != "list":
            arguments["key"] = words[1]
        if action == "set":
            arguments["value"] = " ".join(words[2:])
        return "dict_memory", arguments

    def system_prompt(self) -> str:
        return compose_prompt(
            PromptSpec(
                role="Search World Model",
                objective=(
                    "You simulate the tools of a web research agent: a search engine, a page reader that "
                    "extracts what a goal asks for, and a small key/value memory."
                ),
                state=(
                    "the latest tool output (a search result list or an extracted page, in Markdown) and "
                    "the memory's content, on the first turn; afterwards it is implied by earlier results."
                ),
                action=(
                    "one JSON tool call, `{\"name\": TOOL, \"arguments\": {...}}`, inside a ```json block, "
                    "naming one of the tools defined below."
                ),
                responsibilities=[
                    "**Result prediction**: `web_search` returns a numbered Markdown list of results "
                    "(title as a link, URL, date when known, snippet); `web_extractor` returns the page's "
                    "evidence relevant to the goal, quoted, then a short summary; `dict_memory` returns "
                    "what was stored, read, deleted or listed.",
                    "**Continuity**: pages keep the content earlier results showed; the memory holds "
                    "exactly what earlier `set` calls stored.",
                    "**Realism**: plausible sites, URLs, dates and snippets for the query; unreachable "
                    "pages, paywalls and empty result lists happen as they do on the real web.",
                ],
                sections=[("Tool Definitions", f"```json\n{tools_json(self.specs)}\n```")],
                state_rules=[
                    "Facts stay consistent across searches: the same entity has the same address, date "
                    "and numbers in every result and page.",
                    "When the task describes a fictional world, its facts win over real-world knowledge.",
                ],
                action_rules=[
                    "The tool call is given; simulate it exactly as sent.",
                    "A result list follows the query's wording; an extraction follows the goal.",
                ],
            )
        )

    def initial_state(self) -> str:
        return DEFAULT_INITIAL_STATE
