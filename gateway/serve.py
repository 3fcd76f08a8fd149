"""``humangate serve``: the gateway under uvicorn, with an embedded Redis and worker if needed."""

from __future__ import annotations

import contextlib
import logging
import signal
from types import FrameType

import uvicorn

from channels.registry import configured_channels
from gateway.embedded import EmbeddedRedis
from gateway.inprocess import start_worker_thread
from gateway.local import url_file
from gateway.logs import install_redaction
from schemas.settings import get_settings, override_settings

logger = logging.getLogger(__name__)

GRACEFUL_SHUTDOWN_SECONDS = 5
"""How long uvicorn lets open requests (waiting tool calls) finish on shutdown; they stay pending
in Redis and re-attach after the restart."""


def _exit_on_signal(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def serve(host: str, port: int, with_worker: bool | None) -> int:
    from gateway.app import create_app

    settings = get_settings()
    embedded: EmbeddedRedis | None = None
    if not settings.redis_url:
        embedded = EmbeddedRedis(settings.data_dir).start()
        url_file(settings.data_dir).write_text(embedded.url)
        settings = settings.model_copy(update={"redis_url": embedded.url})
        override_settings(settings)
    assert settings.redis_url is not None
    worker = None
    if with_worker if with_worker is not None else embedded is not None:
        worker = start_worker_thread(settings.redis_url, configured_channels(settings))
    try:
        config = uvicorn.Config(
            create_app(settings),
            host=host,
            port=port,
            log_level="info",
            log_config=None,  # keep our handlers (and their token redaction)
            timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
        )
        install_redaction()
        # uvicorn re-raises the SIGTERM it caught once it has shut down; exiting through SystemExit
        # lets the finally below stop the worker and the embedded Redis instead of orphaning them.
        signal.signal(signal.SIGTERM, _exit_on_signal)
        uvicorn.Server(config).run()
    finally:
        if worker is not None:
            worker.stop()
        if embedded is not None:
            with contextlib.suppress(FileNotFoundError):
                url_file(settings.data_dir).unlink()
            embedded.stop()
    return 0
