"""The provider client against a real OpenID provider (``tests/oidc.py``), its traffic observed
through a recording transport (the real one underneath): PKCE S256 end to end, and the ID token's
checks."""

from __future__ import annotations

import base64
import hashlib
from urllib.parse import parse_qs

import httpx
import httpx2
import pytest

from gateway.signin.provider import Identity, Provider
from gateway.signin.sessions import new_secret
from schemas.errors import SignInError
from schemas.settings import Settings
from tests.oidc import Provider as RunningProvider

PUBLIC_URL = "http://127.0.0.1:9"
"""The gateway these tests pretend to be (nothing listens there: the test follows the redirect)."""


class Recording(httpx2.AsyncBaseTransport):
    """The real transport, keeping every request it sends (to read what reached the provider)."""

    def __init__(self) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.sent: list[httpx2.Request] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.sent.append(request)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def client_of(oidc_provider: RunningProvider, transport: httpx2.AsyncBaseTransport) -> Provider:
    env = oidc_provider.register(f"{PUBLIC_URL}/auth/callback")
    settings = Settings(
        _env_file=None,
        public_url=PUBLIC_URL,
        oidc_issuer=env["HUMANGATE_OIDC_ISSUER"],
        oidc_client_id=env["HUMANGATE_OIDC_CLIENT_ID"],
        oidc_client_secret=env["HUMANGATE_OIDC_CLIENT_SECRET"],
    )
    return Provider(settings, transport=transport)


async def authorize(url: str, subject: str) -> str:
    """Sign ``subject`` in on the provider's page; the code it sends back."""
    async with httpx.AsyncClient() as browser:
        response = await browser.post(url, data={"sub": subject})
    assert response.status_code == 302, response.text
    return parse_qs(httpx.URL(response.headers["location"]).query.decode())["code"][0]


async def test_the_verifier_reaches_the_token_endpoint_and_its_s256_challenge_the_provider(
    oidc_provider: RunningProvider,
) -> None:
    oidc_provider.add_person("ada", "Ada@Example.com", name="Ada Lovelace")
    recording = Recording()
    provider = client_of(oidc_provider, recording)
    state, nonce, verifier = new_secret(), new_secret(), new_secret()
    url = await provider.authorization_url(state=state, nonce=nonce, verifier=verifier)
    query = parse_qs(httpx.URL(url).query.decode())
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    assert (query["code_challenge"], query["code_challenge_method"]) == ([challenge], ["S256"])
    assert (query["state"], query["nonce"]) == ([state], [nonce])
    assert verifier not in url

    identity = await provider.identity(code=await authorize(url, "ada"), verifier=verifier, nonce=nonce)
    assert identity == Identity("ada@example.com", "Ada Lovelace")
    (exchange,) = [r for r in recording.sent if r.url.path == "/oauth2/token"]
    form = parse_qs(exchange.content.decode())
    assert form["code_verifier"] == [verifier] and form["grant_type"] == ["authorization_code"]
    assert "client_secret" not in form and exchange.headers["authorization"].startswith("Basic ")
    discovered = [r for r in recording.sent if r.url.path == "/.well-known/openid-configuration"]
    assert len(discovered) == 1  # the metadata is kept, not read per sign-in


async def test_an_id_token_for_another_nonce_is_refused(oidc_provider: RunningProvider) -> None:
    oidc_provider.add_person("ada", "ada@example.com")
    provider = client_of(oidc_provider, httpx2.AsyncHTTPTransport())
    verifier = new_secret()
    url = await provider.authorization_url(state=new_secret(), nonce=new_secret(), verifier=verifier)
    with pytest.raises(SignInError, match=r"the ID token did not verify \(invalid claim: 'nonce'\)"):
        await provider.identity(code=await authorize(url, "ada"), verifier=verifier, nonce=new_secret())


@pytest.mark.parametrize(
    ("claims", "refusal"),
    [
        ({"email": "ada@example.com", "email_verified": False}, "has not verified the email address"),
        ({"email": "ada@example.com"}, "has not verified the email address"),
        ({"name": "Ada"}, "did not give an email address"),
    ],
)
async def test_only_a_verified_email_signs_in(
    oidc_provider: RunningProvider, claims: dict[str, object], refusal: str
) -> None:
    response = httpx.put(f"{oidc_provider.issuer}/users/ada", json=claims)
    assert response.status_code == 204
    provider = client_of(oidc_provider, httpx2.AsyncHTTPTransport())
    nonce, verifier = new_secret(), new_secret()
    url = await provider.authorization_url(state=new_secret(), nonce=nonce, verifier=verifier)
    with pytest.raises(SignInError, match=refusal):
        await provider.identity(code=await authorize(url, "ada"), verifier=verifier, nonce=nonce)


async def test_a_discovery_document_of_another_issuer_is_refused(oidc_provider: RunningProvider) -> None:
    # The provider names itself by the host it is reached at: as "localhost" it is another issuer.
    env = oidc_provider.register(f"{PUBLIC_URL}/auth/callback")
    settings = Settings(
        _env_file=None,
        public_url=PUBLIC_URL,
        oidc_issuer=env["HUMANGATE_OIDC_ISSUER"].replace("127.0.0.1", "localhost"),
        oidc_client_id=env["HUMANGATE_OIDC_CLIENT_ID"],
        oidc_client_secret=env["HUMANGATE_OIDC_CLIENT_SECRET"],
    )
    provider = Provider(settings, transport=RewriteHost("localhost", "127.0.0.1"))
    with pytest.raises(SignInError, match="names another issuer"):
        await provider.metadata()


class RewriteHost(httpx2.AsyncHTTPTransport):
    """Connects to ``to`` while keeping the URL's host ``host`` out of the request the server sees."""

    def __init__(self, host: str, to: str) -> None:
        super().__init__()
        self.host, self.to = host, to

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        request.url = request.url.copy_with(host=self.to)
        request.headers["host"] = f"{self.to}:{request.url.port}"
        return await super().handle_async_request(request)
