"""Teams' inbound side: ``/teams/messages``, the bot's messaging endpoint."""
