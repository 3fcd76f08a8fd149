"""Telegram: the Bot API over httpx, long polling or a webhook, forms answered in the chat."""
