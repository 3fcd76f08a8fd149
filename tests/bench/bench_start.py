"""How long ``humangate serve`` takes until it answers HTTP (issue 26): starts ``python -m gateway.cli
serve --port <free>`` (with ``HUMANGATE_REDIS_URL`` from the environment, else the embedded Redis in
a temporary data directory; the code of this checkout unless ``PYTHONPATH`` names another), asks
``GET /healthz`` until it answers 200, prints the seconds from the start of the process to that
answer, and stops the process (its whole process group).

    python tests/bench/bench_start.py              # one start
    python tests/bench/bench_start.py --runs 5     # five starts, each printed, then the median

Only the standard library is imported here, so the figure is the gateway's and not this script's.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

DEADLINE_SECONDS = 60.0
"""How long one start may take before the benchmark gives up (exit status 2)."""

POLL_SECONDS = 0.01
"""The interval between two ``/healthz`` attempts: the figure's resolution."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def one_start(data_dir: Path) -> float:
    """Seconds from starting ``serve`` to its first 200 on ``/healthz``."""
    port = free_port()
    env = {"PYTHONPATH": str(ROOT), **os.environ, "HUMANGATE_DATA_DIR": str(data_dir)}
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "gateway.cli", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        while not answers(f"http://127.0.0.1:{port}/healthz"):
            if process.poll() is not None or time.perf_counter() - started > DEADLINE_SECONDS:
                raise SystemExit(f"serve did not start (exit status {process.poll()})")
            time.sleep(POLL_SECONDS)  # polling a child process, bounded by the deadline
        return time.perf_counter() - started
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1, help="starts to measure (default: 1)")
    args = parser.parse_args()
    figures = []
    with tempfile.TemporaryDirectory() as data_dir:
        for _ in range(args.runs):
            figures.append(one_start(Path(data_dir)))
            sys.stdout.write(f"serve answered after {figures[-1]:.2f} s\n")
    if args.runs > 1:
        sys.stdout.write(f"median {statistics.median(figures):.2f} s over {args.runs} starts\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
