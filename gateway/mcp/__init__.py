"""The MCP server at ``/mcp`` (official SDK, streamable HTTP, both protocol eras).

``server`` builds the SDK server and its session manager; ``tools`` is the one explicit table of
tools; ``asking`` is the flow every tool that asks a person shares (open a Human Function, report
progress while it waits, turn its outcome into a result); ``texts`` holds the fixed words agents
see; ``elicit`` is the ``elicit`` tool of SPEC §4.
"""
