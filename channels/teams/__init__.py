"""Microsoft Teams: Adaptive Cards with Universal Actions through the Bot Connector."""
