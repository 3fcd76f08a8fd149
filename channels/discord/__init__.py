"""Discord: embeds and components, interaction parsing and the REST client (discord.py)."""
