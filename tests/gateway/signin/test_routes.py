"""The web sign-in routes over HTTP, against a real gateway and a real OpenID provider: where ``next``
may lead, what a form asks when sign-in is required, and that nothing changes without the settings."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from gateway.core.embedded import free_port
from tests.conftest import GatewayProcess, StartGateway, run_cli
from tests.gateway.flows import WAIT
from tests.oidc import Provider

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean", "title": "Approved"}}}


def gateway_with(start_gateway: StartGateway, provider: Provider, sign_in: str) -> GatewayProcess:
    port = free_port()
    env = provider.register(f"http://127.0.0.1:{port}/auth/callback")
    return start_gateway(port, HUMANGATE_WEB_SIGN_IN=sign_in, **env)


async def form_path(client: httpx.AsyncClient) -> str:
    created = await client.post(
        "/v1/requests", json={"message": "Deploy?", "schema": APPROVAL, "uiType": "web"}
    )
    assert created.status_code == 201, created.text
    return "/f/" + str(created.json()["form_url"]).rsplit("/f/", 1)[1]


ELSEWHERE = (
    "//evil.example/f/x",
    "https://evil.example/",
    "/\\evil.example",
    "javascript:alert(1)",
    "/a b",
    "evil",
)
"""``next`` values that would leave the site (or are not a path at all)."""


async def test_next_must_be_a_path_on_this_site(start_gateway: StartGateway, oidc_provider: Provider) -> None:
    gateway = gateway_with(start_gateway, oidc_provider, "optional")
    async with httpx.AsyncClient(base_url=gateway.url, timeout=WAIT) as client:
        for next_path in ELSEWHERE:
            refused = await client.get("/auth/sign-in", params={"next": next_path})
            assert refused.status_code == 400, next_path
            assert "It would lead to another site." in refused.text
            assert "set-cookie" not in refused.headers
        local = await client.get("/auth/sign-in", params={"next": "/f/abc.def?done=1"})
    assert local.status_code == 303
    assert local.headers["location"].startswith(f"{oidc_provider.issuer}/oauth2/authorize?")
    assert "hg_sign_in=" in local.headers["set-cookie"] and "httponly" in local.headers["set-cookie"].lower()


async def test_a_required_sign_in_redirects_a_form_and_refuses_its_posts(
    start_gateway: StartGateway, oidc_provider: Provider
) -> None:
    gateway = gateway_with(start_gateway, oidc_provider, "required")
    async with httpx.AsyncClient(base_url=gateway.url, timeout=WAIT) as client:
        path = await form_path(client)
        opened = await client.get(path)
        assert opened.status_code == 303
        assert opened.headers["location"] == f"/auth/sign-in?next={path}"
        posted = await client.post(path, data={"hg-action": "accept", "f.approved": "true"})
        assert posted.status_code == 401
        assert "Sign in to answer." in posted.text
        assert f'href="/auth/sign-in?next={path}"' in posted.text
        still = await client.get(f"/v1/requests/{path.split('/')[-1].split('.')[0]}")
    assert still.json()["status"] == "pending"  # nothing was recorded


async def test_optional_sign_in_leaves_the_form_open_to_its_link(
    start_gateway: StartGateway, oidc_provider: Provider
) -> None:
    gateway = gateway_with(start_gateway, oidc_provider, "optional")
    async with httpx.AsyncClient(base_url=gateway.url, timeout=WAIT) as client:
        path = await form_path(client)
        opened = await client.get(path)
    assert opened.status_code == 200
    assert "Signed in as" not in opened.text


async def test_a_callback_without_its_browser_or_state_is_refused(
    start_gateway: StartGateway, oidc_provider: Provider
) -> None:
    gateway = gateway_with(start_gateway, oidc_provider, "optional")
    async with httpx.AsyncClient(base_url=gateway.url, timeout=WAIT) as client:
        started = await client.get("/auth/sign-in", params={"next": "/"})
        state = httpx.URL(started.headers["location"]).params["state"]
        client.cookies.clear()  # another browser comes back with this state
        other = await client.get("/auth/callback", params={"code": "x", "state": state})
        forged = await client.get("/auth/callback", params={"code": "x", "state": "A" * 43})
    for refused in (other, forged):
        assert refused.status_code == 400
        assert "This sign-in could not be completed." in refused.text
        assert "hg_web=" not in refused.headers.get("set-cookie", "")


async def test_sign_out_from_another_site_is_refused(
    start_gateway: StartGateway, oidc_provider: Provider
) -> None:
    gateway = gateway_with(start_gateway, oidc_provider, "optional")
    async with httpx.AsyncClient(base_url=gateway.url, timeout=WAIT) as client:
        refused = await client.post("/auth/sign-out", headers={"Sec-Fetch-Site": "cross-site"})
        ours = await client.post("/auth/sign-out", headers={"Sec-Fetch-Site": "same-origin"})
    assert refused.status_code == 403
    assert ours.status_code == 200 and "You are signed out." in ours.text


async def test_without_the_settings_nothing_changes(start_gateway: StartGateway) -> None:
    gateway = start_gateway()
    async with httpx.AsyncClient(base_url=gateway.url, timeout=WAIT) as client:
        for method, path in (
            ("GET", "/auth/sign-in?next=/"),
            ("GET", "/auth/callback"),
            ("POST", "/auth/sign-out"),
        ):
            assert (await client.request(method, path)).status_code == 404
        path = await form_path(client)
        opened = await client.get(path)
        assert opened.status_code == 200
        assert "Signed in as" not in opened.text and "set-cookie" not in opened.headers
        answered = await client.post(path, data={"hg-action": "accept", "f.approved": "true"})
    assert answered.status_code == 303


async def sign_in_without_a_browser(client: httpx.AsyncClient, subject: str) -> httpx.Response:
    """The whole round trip as a browser makes it: to the provider, authorize ``subject``, back."""
    started = await client.get("/auth/sign-in", params={"next": "/inbox"})
    assert started.status_code == 303
    async with httpx.AsyncClient(timeout=WAIT) as browser_at_provider:
        authorized = await browser_at_provider.post(started.headers["location"], data={"sub": subject})
    assert authorized.status_code == 302, authorized.text
    callback = httpx.URL(authorized.headers["location"])
    return await client.get(callback.path, params=callback.params)


async def test_a_sign_in_ends_at_next_with_a_session(
    start_gateway: StartGateway, oidc_provider: Provider
) -> None:
    oidc_provider.add_person("ada", "ada@example.com")
    gateway = gateway_with(start_gateway, oidc_provider, "optional")
    async with httpx.AsyncClient(base_url=gateway.url, timeout=WAIT) as client:
        back = await sign_in_without_a_browser(client, "ada")
        assert back.status_code == 303 and back.headers["location"] == "/inbox"
        cookie = back.headers["set-cookie"].lower()
        assert (
            "hg_web=" in cookie and "httponly" in cookie and "samesite=lax" in cookie and "path=/" in cookie
        )
        assert "secure" not in cookie  # the public URL is http://127.0.0.1 here


async def test_a_wrong_client_secret_is_refused_by_the_provider(
    start_gateway: StartGateway, oidc_provider: Provider
) -> None:
    oidc_provider.add_person("ada", "ada@example.com")
    port = free_port()
    env = oidc_provider.register(f"http://127.0.0.1:{port}/auth/callback")
    gateway = start_gateway(port, **env | {"HUMANGATE_OIDC_CLIENT_SECRET": "not-the-secret"})
    async with httpx.AsyncClient(base_url=gateway.url, timeout=WAIT) as client:
        back = await sign_in_without_a_browser(client, "ada")
    assert back.status_code == 403
    assert "The sign-in provider refused to complete the sign-in." in back.text
    assert "hg_web=" not in back.headers.get("set-cookie", "")
    assert "not-the-secret" not in gateway.output()


async def test_a_request_with_approvers_asks_whoever_is_not_signed_in_to_sign_in(
    start_gateway: StartGateway, oidc_provider: Provider, redis_url: str, tmp_path: Path
) -> None:
    """docs/sign-in.md#requests-with-approvers with sign-in optional: the link alone is a sign-in
    (GET 303, POST 401 with a sign-in link), not a refusal: nothing is recorded, the request waits."""
    policy = tmp_path / "humangate.toml"
    policy.write_text('[policies.deploys]\napprovers = ["email:ada@example.com"]\n')
    port = free_port()
    env = oidc_provider.register(f"http://127.0.0.1:{port}/auth/callback")
    gateway = start_gateway(port, HUMANGATE_POLICY_FILE=str(policy), **env)
    async with httpx.AsyncClient(base_url=gateway.url, timeout=WAIT) as client:
        path = await form_path(client)
        opened = await client.get(path)
        assert opened.status_code == 303
        assert opened.headers["location"].startswith("/auth/sign-in?next=")
        posted = await client.post(path, data={"hg-action": "accept"}, headers={"Origin": gateway.url})
        assert posted.status_code == 401 and "Sign in" in posted.text
        assert "not an approver" not in posted.text
    trail = run_cli("audit", "export", env={}, redis_url=redis_url)
    assert trail.returncode == 0, trail.stderr
    assert [json.loads(line)["event"] for line in trail.stdout.splitlines()] == ["created"]
