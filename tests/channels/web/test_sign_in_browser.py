"""Web sign-in in a real headless Chromium, through a real OpenID provider (``tests/oidc.py``): a form
that requires sign-in sends the person to the provider and back, signed in; a tampered ``state`` or
``nonce`` and an unverified email are refused; signing out ends the session."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import pytest
from playwright.async_api import Page, Route, expect

from gateway.core.embedded import free_port
from tests.browser import OpenPage
from tests.conftest import GatewayProcess, StartGateway
from tests.gateway.flows import start_call
from tests.mcp_client import text_of
from tests.oidc import Provider

pytestmark = pytest.mark.browser

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean", "title": "Approved"}}}


def signing_in_gateway(start_gateway: StartGateway, provider: Provider) -> GatewayProcess:
    """A gateway whose every form asks for sign-in with ``provider`` (registered as its client)."""
    port = free_port()
    env = provider.register(f"http://127.0.0.1:{port}/auth/callback")
    return start_gateway(port, HUMANGATE_WEB_SIGN_IN="required", **env)


def authorize_page(provider: Provider) -> re.Pattern[str]:
    """The provider's sign-in page, whatever its query."""
    return re.compile(re.escape(f"{provider.issuer}/oauth2/authorize?"))


async def sign_in_at_provider(page: Page, provider: Provider, subject: str) -> None:
    """What the person does on the provider's page: say who they are and authorize."""
    await expect(page).to_have_url(authorize_page(provider))
    await page.locator("input[name=sub]").fill(subject)
    await page.get_by_role("button", name="Authorize").click()


def with_param(url: str, name: str, value: str) -> str:
    parts = urlsplit(url)
    query = {key: values[0] for key, values in parse_qs(parts.query).items()}
    return urlunsplit(parts._replace(query=urlencode(query | {name: value})))


async def test_a_form_asks_for_sign_in_and_the_person_comes_back_to_it_signed_in(
    start_gateway: StartGateway, open_page: OpenPage, oidc_provider: Provider
) -> None:
    oidc_provider.add_person("ada", "Ada@Example.com", name="Ada Lovelace")
    gateway = signing_in_gateway(start_gateway, oidc_provider)
    call = start_call(gateway.url, {"message": "Deploy?", "schema": APPROVAL, "uiType": "web"})
    form_url = await call.form_url()
    watched = await open_page()
    page = watched.page

    async with page.expect_request(lambda r: r.url.startswith(oidc_provider.issuer)) as asked:
        await page.goto(form_url)
    query = parse_qs(urlsplit((await asked.value).url).query)
    assert query["code_challenge_method"] == ["S256"]
    assert len(query["code_challenge"][0]) == 43  # base64url of a SHA-256, never the verifier
    assert query["scope"] == ["openid email profile"]
    assert len(query["state"][0]) == 43 and len(query["nonce"][0]) == 43
    assert query["redirect_uri"] == [f"{gateway.url}/auth/callback"]

    await sign_in_at_provider(page, oidc_provider, "ada")
    await expect(page).to_have_url(form_url)
    await expect(page.locator(".signed-in")).to_contain_text("Signed in as Ada Lovelace (ada@example.com)")
    await watched.problems()  # the provider's own page loads a stylesheet from a CDN (unreachable here):
    watched.console_errors.clear()  # from here on, only our pages count
    session = next(c for c in await page.context.cookies() if c["name"] == "hg_web")
    assert (session["path"], session["httpOnly"], session["sameSite"]) == ("/", True, "Lax")

    await page.get_by_label("Approved").check()
    await page.get_by_role("button", name="Submit").click()
    await expect(page.locator(".outcome")).to_contain_text("by Ada Lovelace (ada@example.com)")
    assert text_of(await call.result()) == 'User provided: {"approved":true}'
    assert await watched.problems() == []

    await page.get_by_role("button", name="Sign out").click()
    await expect(page.get_by_role("heading", name="You are signed out.")).to_be_visible()
    assert [c for c in await page.context.cookies() if c["name"] == "hg_web"] == []
    await page.goto(form_url)  # the session is over: the form asks for a sign-in again
    await expect(page).to_have_url(authorize_page(oidc_provider))

    log = gateway.output()  # no secret of the sign-in reached the gateway's log
    assert "/auth/callback?<redacted>" in log
    for secret in (query["state"][0], session["value"], form_url.rsplit(".", 1)[1]):
        assert secret not in log


async def test_a_tampered_state_is_refused(
    start_gateway: StartGateway, open_page: OpenPage, oidc_provider: Provider
) -> None:
    oidc_provider.add_person("ada", "ada@example.com")
    gateway = signing_in_gateway(start_gateway, oidc_provider)
    call = start_call(gateway.url, {"message": "Deploy?", "schema": APPROVAL, "uiType": "web"})
    page = (await open_page()).page

    async def forge_state(route: Route) -> None:
        await route.continue_(url=with_param(route.request.url, "state", "A" * 43))

    await page.route(f"{oidc_provider.issuer}/oauth2/authorize?*", forge_state)
    await page.goto(await call.form_url())
    await sign_in_at_provider(page, oidc_provider, "ada")
    await expect(page.get_by_role("heading", name="This sign-in could not be completed.")).to_be_visible()
    assert [c for c in await page.context.cookies() if c["name"] == "hg_web"] == []


async def test_a_tampered_nonce_is_refused(
    start_gateway: StartGateway, open_page: OpenPage, oidc_provider: Provider
) -> None:
    oidc_provider.add_person("ada", "ada@example.com")
    gateway = signing_in_gateway(start_gateway, oidc_provider)
    call = start_call(gateway.url, {"message": "Deploy?", "schema": APPROVAL, "uiType": "web"})
    page = (await open_page()).page

    async def forge_nonce(route: Route) -> None:  # the provider then signs an ID token for another nonce
        await route.continue_(url=with_param(route.request.url, "nonce", "N" * 43))

    await page.route(f"{oidc_provider.issuer}/oauth2/authorize?*", forge_nonce)
    await page.goto(await call.form_url())
    await sign_in_at_provider(page, oidc_provider, "ada")
    await expect(page.get_by_role("heading", name="You could not be signed in.")).to_be_visible()
    await expect(page.locator("main")).to_contain_text("The ID token did not verify (invalid claim: 'nonce')")
    assert [c for c in await page.context.cookies() if c["name"] == "hg_web"] == []


async def test_an_unverified_email_is_refused(
    start_gateway: StartGateway, open_page: OpenPage, oidc_provider: Provider
) -> None:
    oidc_provider.add_person("mallory", "ada@example.com", verified=False)
    gateway = signing_in_gateway(start_gateway, oidc_provider)
    call = start_call(gateway.url, {"message": "Deploy?", "schema": APPROVAL, "uiType": "web"})
    page = (await open_page()).page
    await page.goto(await call.form_url())
    await sign_in_at_provider(page, oidc_provider, "mallory")
    await expect(page.get_by_role("heading", name="You could not be signed in.")).to_be_visible()
    await expect(page.locator("main")).to_contain_text(
        "The sign-in provider has not verified the email address ada@example.com"
    )
    assert [c for c in await page.context.cookies() if c["name"] == "hg_web"] == []


async def test_only_a_signed_in_approver_answers_a_request_with_approvers(
    start_gateway: StartGateway, open_page: OpenPage, oidc_provider: Provider, tmp_path: Path
) -> None:
    """docs/sign-in.md#requests-with-approvers in a browser: the link alone answers nothing; someone
    signed in who is not an approver is refused and changes nothing; the approver (email compared in
    any case) answers, and the result names them."""
    oidc_provider.add_person("ada", "Ada@Example.com", name="Ada Lovelace")
    oidc_provider.add_person("eve", "eve@example.com", name="Eve")
    policy = tmp_path / "humangate.toml"
    policy.write_text('[policies.deploys]\napprovers = ["email:ada@example.COM"]\n')
    port = free_port()
    env = oidc_provider.register(f"http://127.0.0.1:{port}/auth/callback")
    gateway = start_gateway(port, HUMANGATE_POLICY_FILE=str(policy), **env)
    call = start_call(gateway.url, {"message": "Deploy?", "schema": APPROVAL, "uiType": "web"})
    form_url = await call.form_url()

    eve = (await open_page()).page
    await eve.goto(form_url)  # not signed in: sent to the provider first
    await sign_in_at_provider(eve, oidc_provider, "eve")
    await expect(eve.get_by_role("heading", name="You are not an approver for this request.")).to_be_visible()
    await expect(eve.locator("main")).to_contain_text("Only email:ada@example.COM may answer.")
    await expect(eve.locator("main")).to_contain_text("You are signed in as Eve (eve@example.com).")
    refused = await eve.request.post(form_url, form={"approved": "on"}, headers={"Origin": gateway.url})
    assert refused.status == 403 and "You are not an approver for this request" in await refused.text()
    assert not call.task.done()

    watched = await open_page()
    ada = watched.page
    await ada.goto(form_url)
    await sign_in_at_provider(ada, oidc_provider, "ada")
    await expect(ada).to_have_url(form_url)
    await expect(ada.locator(".signed-in")).to_contain_text("Signed in as Ada Lovelace (ada@example.com)")
    await ada.get_by_label("Approved").check()
    await ada.get_by_role("button", name="Submit").click()
    await expect(ada.locator(".outcome")).to_contain_text("by Ada Lovelace (ada@example.com)")
    result = await call.result()
    assert text_of(result) == 'User provided: {"approved":true}'
    assert result.structured_content is not None
    assert result.structured_content["answeredBy"] == {  # where they answered, and who they are
        "channel": "web",
        "id": "email:ada@example.com",
        "name": "Ada Lovelace",
    }
    log = gateway.output()
    assert "refused a form answer" in log and "by=email:eve@example.com: not an approver" in log


async def test_a_person_signed_in_to_the_inbox_sees_and_answers_only_the_requests_that_name_them(
    start_gateway: StartGateway, open_page: OpenPage, oidc_provider: Provider, tmp_path: Path
) -> None:
    """docs/inbox.md: the inbox offers the organisation's sign-in beside the operator key; a person signed
    in that way is `email:<address>`, and their inbox holds only the requests whose approvers name
    them (anyone else's is a 404, as an unknown one); live updates keep to the same rule."""
    oidc_provider.add_person("ada", "ada@example.com", name="Ada Lovelace")
    oidc_provider.add_person("eve", "eve@example.com", name="Eve")
    policy = tmp_path / "humangate.toml"
    policy.write_text('[policies.deploys]\napprovers = ["email:ada@example.com", "operator:alice"]\n')
    port = free_port()
    env = oidc_provider.register(f"http://127.0.0.1:{port}/auth/callback")
    gateway = start_gateway(port, HUMANGATE_POLICY_FILE=str(policy), **env)

    eve = (await open_page()).page
    await eve.goto(f"{gateway.url}/inbox")
    await eve.get_by_role("link", name="Sign in with your organisation").click()
    await sign_in_at_provider(eve, oidc_provider, "eve")
    await expect(eve).to_have_url(f"{gateway.url}/inbox")
    await expect(eve.locator("#hg-operator")).to_have_text("Eve (eve@example.com)")
    await expect(eve.locator("#hg-feed-state")).to_have_text("Live: new requests appear as they arrive.")

    call = start_call(gateway.url, {"message": "Deploy v2?", "schema": APPROVAL, "uiType": "web"})
    hf_id = (await call.form_url()).rsplit("/", 1)[1].split(".")[0]
    watched = await open_page()
    ada = watched.page
    await ada.goto(f"{gateway.url}/inbox")
    await ada.get_by_role("link", name="Sign in with your organisation").click()
    await sign_in_at_provider(ada, oidc_provider, "ada")
    await expect(ada.locator("#hg-operator")).to_have_text("Ada Lovelace (ada@example.com)")
    item = ada.locator("#hg-list li")
    await expect(item).to_have_count(1)
    await expect(item).to_contain_text("Deploy v2?")
    await watched.problems()  # the provider's own page loads a stylesheet from a CDN (unreachable here)
    watched.console_errors.clear()

    await expect(eve.locator("#hg-list li")).to_have_count(0)  # the live feed did not add it for Eve
    hidden = await eve.request.get(f"{gateway.url}/inbox/{hf_id}")
    assert hidden.status == 404 and "Deploy v2?" not in await hidden.text()

    await item.locator("a").click()
    await ada.get_by_label("Approved").check()
    await ada.get_by_role("button", name="Submit").click()
    await expect(ada.locator("#hg-notice")).to_have_text("Your answer was recorded; the agent has it.")
    result = await call.result()
    assert text_of(result) == 'User provided: {"approved":true}'
    assert result.structured_content is not None
    assert result.structured_content["answeredBy"] == {
        "channel": "inbox",
        "id": "email:ada@example.com",
        "name": "Ada Lovelace",
    }
    assert await watched.problems() == []

    await ada.get_by_role("button", name="Sign out").click()  # the web session ends, and the inbox's
    await expect(ada.get_by_role("heading", name="You are signed out.")).to_be_visible()
    await ada.goto(f"{gateway.url}/inbox")
    await expect(ada.get_by_role("heading", name="Sign in to the inbox")).to_be_visible()
