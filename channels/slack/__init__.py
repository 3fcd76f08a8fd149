"""Slack: Block Kit rendering, interaction parsing and the Web API client (slack-sdk)."""
