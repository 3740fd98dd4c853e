"""The search domain: web search, page extraction and a key/value memory, simulated."""

from __future__ import annotations

from typing import Any

from agentworld_local.domains.syntax import normalize_url, split_words
from agentworld_local.domains.tools import Shortcut, ToolCallDomain
from agentworld_local.errors import ActionError

#: dict_memory's operations, and the friendly words that mean them.
MEMORY_OPERATIONS = ("add", "update", "retrieve", "retrieve_all", "remove", "remove_all")
_MEMORY_WORDS = {"set": "add", "get": "retrieve", "delete": "remove", "list": "retrieve_all",
                 "all": "retrieve_all", "clear": "remove_all"}

# The contracts of the official template: web_search takes `query` or `queries` and answers
# with numbered results; web_extractor takes a URL and answers with the page as Markdown;
# dict_memory adds, updates, retrieves and removes entries.
SEARCH_TOOLS: list[dict[str, Any]] = [
    {
        "name": "web_search",
        "description": "Search the web. Returns 10 numbered results per query, each with URL, title, snippet and date.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "One search query."},
                "queries": {"type": "array", "items": {"type": "string"}, "description": "Several queries, answered in turn."},
            },
        },
    },
    {
        "name": "web_extractor",
        "description": "Fetch a web page and return its content as Markdown.",
        "inputSchema": {
            "type": "object",
            "properties": {"url": {"type": "string", "description": "The page to fetch."}},
            "required": ["url"],
        },
    },
    {
        "name": "dict_memory",
        "description": "A key/value memory kept for the whole session.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "operation": {"type": "string", "enum": list(MEMORY_OPERATIONS)},
                "dict": {"type": "object", "description": "Entries to add or update (add, update)."},
                "key_list": {"type": "array", "items": {"type": "string"}, "description": "Keys to retrieve or remove."},
            },
            "required": ["operation"],
        },
    },
]

MEMORY_HELP = (
    "Use `memory add KEY VALUE`, `memory update KEY VALUE`, `memory retrieve KEY...`, `memory all`, "
    "`memory remove KEY...` or `memory clear`."
)


class SearchDomain(ToolCallDomain):
    name = "search"
    title = "Web search and page extraction"
    state_lexer = "markdown"
    default_tools = SEARCH_TOOLS
    friendly_examples = ['search "best ramen in Osaka"', "open https://example.com/menu", "memory add city Osaka"]

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
        words = split_words(rest, self.action_help()) if rest.strip() else []
        if len(words) != 1:
            raise ActionError("`open` takes one URL, e.g. `open https://example.com/menu`.", self.action_help())
        return "web_extractor", {"url": normalize_url(words[0])}

    def _memory(self, rest: str) -> tuple[str, dict[str, Any]]:
        self._need("dict_memory")
        words = split_words(rest, self.action_help()) if rest.strip() else []
        operation = _MEMORY_WORDS.get(words[0], words[0]) if words else ""
        if operation in ("add", "update") and len(words) >= 3:
            return "dict_memory", {"operation": operation, "dict": {words[1]: " ".join(words[2:])}}
        if operation in ("retrieve", "remove") and len(words) >= 2:
            return "dict_memory", {"operation": operation, "key_list": words[1:]}
        if operation in ("retrieve_all", "remove_all") and len(words) == 1:
            return "dict_memory", {"operation": operation}
        raise ActionError(MEMORY_HELP, self.action_help())

    def check_call(self, name: Any, arguments: Any) -> dict[str, Any]:
        call = super().check_call(name, arguments)
        if call["name"] == "web_search" and self._by_name["web_search"].definition() == SEARCH_TOOLS[0]:
            if not ({"query", "queries"} & set(call["arguments"])):
                raise ActionError("`web_search` needs a `query` or a list of `queries`.", self.action_help())
        return call

    # The official sessions start empty: no search yet, nothing in memory.
    def initial_state(self) -> str:
        return ""
