"""The Textual face of awl: the start screen, the session screen and their widgets.

Only the CLI imports this package. It holds no model or session logic: it drives
`agentworld_local.session` and renders its events.
"""
