"""The REST API's documentation at ``/docs``: Swagger UI served by the gateway itself.

FastAPI's own page loads Swagger UI from a public CDN. Here Swagger UI's release files come from
the ``fastapi-offline`` package (a PyPI package that ships them, kept current) and are served under
``/docs/assets/``; the page's one inline script carries the response's CSP nonce, and the CSP lets
scripts, styles and fetches come from this origin only. ``/redoc`` (another CDN script and web
fonts) is not served.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse, HTMLResponse

from channels.pages import hardened_headers, new_nonce

router = APIRouter(include_in_schema=False)

ASSETS_DIR = Path(str(files("fastapi_offline") / "static"))
"""Where ``fastapi-offline`` keeps Swagger UI's files."""

ASSETS = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "favicon.png": "image/png",
}
"""The files ``/docs`` needs, by name, with their media types; nothing else is served."""

ASSET_MAX_AGE = 86_400
"""Seconds a browser may cache an asset (they change only when the package is upgraded)."""

OPENAPI_URL = "/openapi.json"

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>humangate REST API</title>
<link rel="icon" href="/docs/assets/favicon.png">
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script nonce="{nonce}">
window.ui = SwaggerUIBundle({{
  url: "{openapi}",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout"
}});
</script>
</body>
</html>
"""


def docs_headers(nonce: str) -> dict[str, str]:
    """This origin's scripts (plus the nonce'd inline one), styles, images and API calls; no
    framing, no third party."""
    csp = (
        "default-src 'none'; "
        f"script-src 'self' 'nonce-{nonce}'; "
        "style-src 'self'; "
        "img-src 'self' data:; "
        "connect-src 'self'; "
        "form-action 'self'; "
        "frame-ancestors 'none'; "
        "base-uri 'none'"
    )
    return hardened_headers(csp)


@router.get("/docs")
async def docs_page() -> HTMLResponse:
    """Swagger UI for ``/openapi.json``."""
    nonce = new_nonce()
    return HTMLResponse(PAGE.format(nonce=nonce, openapi=OPENAPI_URL), headers=docs_headers(nonce))


@router.get("/docs/assets/{name}")
async def docs_asset(name: str) -> FileResponse:
    """One of Swagger UI's files."""
    if name not in ASSETS:
        raise HTTPException(404, f"no documentation asset named {name!r}")
    headers = {"Cache-Control": f"public, max-age={ASSET_MAX_AGE}", "X-Content-Type-Options": "nosniff"}
    return FileResponse(ASSETS_DIR / name, media_type=ASSETS[name], headers=headers)
