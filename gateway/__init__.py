"""The HTTP process: FastAPI app, MCP server, webhooks, web form, CLI.

Kept import-light on purpose: ``gateway.core.store`` and ``gateway.core.redis_keys`` are shared with the RQ
workers, which must not pull in FastAPI.
"""
