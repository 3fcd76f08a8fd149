"""The channel names, in a module of their own so the command line's help can name them without
importing the settings (pydantic)."""

CHANNEL_NAMES = ("slack", "discord", "teams", "web", "telegram", "email")
"""Every channel name the ``uiType`` argument accepts, in the order the tool lists them."""
