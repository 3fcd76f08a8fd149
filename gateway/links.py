"""Links humangate hands out. Form links are capabilities: never log them."""

from __future__ import annotations

from schemas.models import HumanFunction
from schemas.settings import Settings


def form_path(hf: HumanFunction) -> str:
    return f"/f/{hf.form_token}"


def form_url(settings: Settings, hf: HumanFunction) -> str:
    """The absolute URL of ``hf``'s hosted form, under ``HUMANGATE_PUBLIC_URL``."""
    return settings.public_base + form_path(hf)
