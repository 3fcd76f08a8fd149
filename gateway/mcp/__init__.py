"""The MCP server at ``/mcp`` (official SDK, streamable HTTP, both protocol eras).

``server`` builds the SDK server and its session manager; ``tools`` is the one explicit table of
tools; ``asking`` is the flow every tool that asks a person shares (open a Human Function, report
progress while it waits, turn its outcome into a result); ``texts`` holds the fixed words agents
see; ``elicit`` is the ``elicit`` tool of docs/tools.md#elicit. The agent's own client as a place to
answer: ``client_form`` races the client's elicitation form against the channel; ``app`` serves the
inline form app and ``answering`` its app-only tool ``answer_request``; ``tasks``, ``task_store`` and
``task_methods`` run calls as tasks in both eras.
"""
