"""Discord's inbound side: ``/discord/interactions``, deferred replies and per-user drafts."""
