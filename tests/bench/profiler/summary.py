"""Print the ``pstats`` files ``sitecustomize.py`` wrote, merged: ``python summary.py FILE... [--top N]``.

First the answer path's steps (cumulative seconds per answer, calls), then the top functions by
cumulative and by own time. ``--answers N``: answers the files cover (200 a burst by default times
the files), to print milliseconds per answer.
"""

from __future__ import annotations

import argparse
import pstats
import sys


def out(line: str) -> None:
    sys.stdout.write(line + "\n")


STEPS = [
    ("whole answer route (POST /f/{token})", "form.py", "submit_form"),
    ("  form body parsing (request.form)", "requests.py", "form"),
    ("  loading the request (desk.get)", "desk.py", "get"),
    ("  approver check (_approvers_only)", "form.py", "_approvers_only"),
    ("  parse_form", "post.py", "parse_form"),
    ("  service.answer", "service.py", "answer"),
    ("    validation (validate_answer_off_loop)", "validation.py", "validate_answer_off_loop"),
    ("    FINISH (store.finish)", "store.py", "finish"),
    ("    webhook announce", "webhooks.py", "announce"),
    ("    logging (Logger._log)", "__init__.py", "_log"),
    ("  response (RedirectResponse)", "responses.py", "__init__"),
    ("events reader (wake-up of waiting calls)", "events.py", "_apply"),
    ("tool result sent (gateway/mcp)", "delivery.py", "__call__"),
    ("waiting calls' progress ticks (on_tick)", "asking.py", "on_tick"),
    ("the collector (gc.collect on its clock)", "collector.py", "collect_now"),
    ("every HTTP request's own coroutine (run_asgi)", "httptools_impl.py", "run_asgi"),
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="+")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--answers", type=int, default=0)
    args = parser.parse_args()
    stats = pstats.Stats(args.files[0])
    for extra in args.files[1:]:
        stats.add(extra)
    answers = args.answers or 200 * len(args.files)
    table = stats.stats  # type: ignore[attr-defined]
    out(f"{answers} answers; total profiled time {stats.total_tt:.3f} s")  # type: ignore[attr-defined]
    for label, filename, name in STEPS:
        found = [(k, v) for k, v in table.items() if k[0].endswith(filename) and k[2] == name]
        if not found:
            out(f"{label:48} -")
            continue
        calls = sum(v[1] for _, v in found)
        cum = sum(v[3] for _, v in found)
        out(f"{label:48} {cum / answers * 1000:7.3f} ms/answer  ({calls} calls)")
    stats.sort_stats("cumulative").print_stats(args.top)
    stats.sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
