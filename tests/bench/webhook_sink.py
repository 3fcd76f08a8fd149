"""A webhook receiver process for bench_webhooks.py: aiohttp on 127.0.0.1, answering 200 to every
POST and writing one JSON line per request (arrival time, headers, body) to a file.

    python tests/bench/webhook_sink.py PORT FILE
"""

from __future__ import annotations

import json
import sys
import time

from aiohttp import web


def main(port: int, path: str) -> None:
    sink = open(path, "a", encoding="utf-8")

    async def receive(request: web.Request) -> web.Response:
        body = await request.read()
        line = {"at": time.time(), "headers": dict(request.headers), "body": body.decode()}
        sink.write(json.dumps(line) + "\n")
        sink.flush()
        return web.Response(status=200)

    app = web.Application()
    app.router.add_post("/hooks", receive)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
