"""Our system prompt templates, one module per domain, each exposing `TEMPLATE`.

Each follows the official template's skeleton for its domain (domains/skeletons.py) in our
own words with our own examples. `{tool_definitions}` and `{demonstrations}` are filled
by domains/packs.py, exactly as in a prompt pack loaded from disk.
"""
