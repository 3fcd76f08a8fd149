"""A worker imports its channels' slow client modules as it starts (``workers.preload``)."""

from __future__ import annotations

import subprocess
import sys

from workers.preload import client_modules


def test_the_teams_client_is_named_for_preloading_and_only_for_its_channel() -> None:
    assert client_modules(["slack", "teams", "web"]) == ["channels.teams.connector"]
    assert client_modules(["slack", "web", "no-such-channel"]) == []


def test_preloading_imports_the_client_before_any_job_needs_it() -> None:
    # A fresh interpreter: nothing has imported the Teams client yet, then the preload thread does.
    code = (
        "import sys\n"
        "from workers.preload import preload_clients\n"
        "assert 'channels.teams.connector' not in sys.modules\n"
        "thread = preload_clients(['teams'])\n"
        "assert thread is not None\n"
        "thread.join(60)\n"
        "assert 'channels.teams.connector' in sys.modules\n"
        "assert preload_clients(['web']) is None\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr
