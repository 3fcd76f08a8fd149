"""Slack's inbound side: ``/slack/events`` (verified, then slack-bolt) and its interaction handlers."""
