"""The operators' inbox at ``/inbox`` (docs/inbox.md): every pending request of every channel, live, and
answerable in place. ``sessions`` signs operators in (operator keys -> session cookies), ``feed``
streams live updates from Redis, ``routes`` serves the pages; the pages themselves are drawn by
``channels.web.inbox`` (reached through ``channels.pages``)."""
