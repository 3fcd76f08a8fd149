"""The core every process shares: the Human Function store and its scripts, Redis keys and client,
events, waiting, callers, the RQ queue. No FastAPI and no MCP here: the RQ workers import this too.

The state machine these modules keep is drawn in docs/state-machine.md.
"""
