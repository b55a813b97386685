"""web_fetch in-process (tools/web.py): which addresses are refused, the allow list, a name that
resolves to a public and a private address (DNS rebinding), what a fetch connects to, and the
page's text: HTML as Markdown, binary refused, bounds, the untrusted wrapper."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from cody_lsp.config import SettingError, WebSettings, parse_private_hosts
from cody_lsp.server.tools import ToolConfig, run_tool
from cody_lsp.server.tools.background import BackgroundCommands
from cody_lsp.server.tools.kit import ToolKit
from cody_lsp.server.tools.web import checked_url, cut_text, refused_address, wrap


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.255", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "link-local (where cloud metadata services answer)"),
        ("100.100.100.200", "non-public"),  # a cloud's metadata service, in the shared address space
        ("0.0.0.0", "private"),  # this machine, to a connect()
        ("::1", "loopback"),
        ("fc00::1", "private"),
        ("fd00:ec2::254", "private"),
        ("fe80::1", "link-local (where cloud metadata services answer)"),
        ("::ffff:127.0.0.1", "loopback"),  # IPv4 inside IPv6: mapped, 6to4, NAT64
        ("2002:7f00:1::", "loopback"),
        ("64:ff9b::a9fe:a9fe", "link-local (where cloud metadata services answer)"),
        ("224.0.0.1", "non-public"),
        ("93.184.215.14", None),
        ("2606:4700::6810:84e5", None),
        ("172.32.0.1", None),
    ],
)
def test_which_addresses_a_fetch_may_not_reach(address: str, kind: str | None):
    assert refused_address(ipaddress.ip_address(address)) == kind


def test_the_allow_list_is_parsed_and_checked():
    assert parse_private_hosts("X", " localhost:8000 , 10.0.0.5,[::1]:3000,::1, Intranet.Example. ") == (
        "localhost:8000",
        "10.0.0.5",
        "::1:3000",
        "::1",
        "intranet.example",
    )
    for bad in ("http://x", "host:0", "host:99999", "a b", "[::1]x", "user@host"):
        with pytest.raises(SettingError, match="is not host or host:port"):
            parse_private_hosts("CODY_WEB_ALLOW_PRIVATE_HOSTS", bad)


def test_urls_a_fetch_takes():
    assert checked_url("https://Docs.Example.org/a?b#c") == ("https://Docs.Example.org/a?b#c", "docs.example.org", 443)
    assert checked_url("/next", "http://x.org:81/a")[1:] == ("x.org", 81)
    with pytest.raises(Exception, match="http:// and https:// URLs, not file"):
        checked_url("file:///etc/passwd")
    with pytest.raises(Exception, match="does not send credentials"):
        checked_url("http://user:pw@example.org/")
    with pytest.raises(Exception, match="names no host"):
        checked_url("http:///x")


def test_the_wrapper_cannot_be_closed_by_the_page_and_text_is_cut_at_a_character():
    wrapped = wrap("https://e.org/", "a </web_page> b </WEB_PAGE >", "web_fetch https://e.org/: HTTP 200.")
    assert wrapped.count("</web_page>") == 1 and wrapped.endswith("</web_page>")
    assert "a <\\/web_page> b <\\/WEB_PAGE >" in wrapped
    assert cut_text("aé" * 10, 5) == ("aéa", 17)


# ------------------------------------------------------------------ fetches against a local site


class Site:
    def __init__(self) -> None:
        self.hits: list[str] = []
        self.runner: web.AppRunner | None = None
        self.port = 0
        self.stopping = asyncio.Event()  # /slow answers then (its stop does not wait 5 s for it)

    async def start(self) -> None:
        app = web.Application()

        async def handler(request: web.Request) -> web.StreamResponse:
            self.hits.append(request.path)
            if request.path == "/html":
                return web.Response(
                    text="<html><body><h2>Hi</h2><p>x <a href='b'>b</a></p></body></html>", content_type="text/html"
                )
            if request.path == "/latin1":
                return web.Response(
                    body="café".encode("latin-1"), headers={"Content-Type": "text/plain; charset=latin-1"}
                )
            if request.path == "/json":
                return web.json_response({"a": 1})
            if request.path == "/nul":
                return web.Response(body=b"\x00\x01\x02binary", headers={"Content-Type": "application/x-thing"})
            if request.path == "/loop":
                raise web.HTTPFound("/loop")
            if request.path == "/slow":
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.stopping.wait(), 5)
            if request.path == "/404":
                return web.Response(status=404, text="no such page")
            return web.Response(text="plain")

        app.router.add_get("/{tail:.*}", handler)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = self.runner.addresses[0][1]

    async def stop(self) -> None:
        self.stopping.set()
        if self.runner is not None:
            await self.runner.cleanup()


@pytest.fixture
async def site():
    served = Site()
    await served.start()
    yield served
    await served.stop()


def config_for(settings: WebSettings) -> ToolConfig:
    async def plan(_plan: Any) -> None:
        pass

    return ToolConfig(kit=ToolKit("ses_x", plan, BackgroundCommands("ses_x"), settings))


async def fetch(url: str, settings: WebSettings, **args: Any):
    return await run_tool("web_fetch", {"url": url, **args}, Path("/"), config_for(settings))


async def test_pages_as_text(site: Site):
    allowed = WebSettings(allow_private_hosts=(f"127.0.0.1:{site.port}",))
    page = await fetch(f"http://127.0.0.1:{site.port}/html", allowed)
    assert page.ok and "## Hi" in page.content and f"[b](http://127.0.0.1:{site.port}/b)" in page.content
    latin = await fetch(f"http://127.0.0.1:{site.port}/latin1", allowed)
    assert latin.ok and "café" in latin.content and "text/plain" in latin.content
    data = await fetch(f"http://127.0.0.1:{site.port}/json", allowed)
    assert data.ok and '{"a": 1}' in data.content
    binary = await fetch(f"http://127.0.0.1:{site.port}/nul", allowed)
    assert not binary.ok and "it is application/x-thing" in binary.content
    missing = await fetch(f"http://127.0.0.1:{site.port}/404", allowed)
    assert not missing.ok and "The server answered HTTP 404" in missing.content and "no such page" in missing.content
    looping = await fetch(f"http://127.0.0.1:{site.port}/loop", allowed)
    assert not looping.ok and "gave up after 5 redirects" in looping.content
    cut = await fetch(f"http://127.0.0.1:{site.port}/html", allowed, max_bytes=3)
    assert cut.ok and "more characters of the page are not shown (max_bytes 3" in cut.content
    assert site.hits.count("/loop") == 6


async def test_a_host_not_allowed_is_refused_before_any_connection(site: Site):
    other_port = WebSettings(allow_private_hosts=(f"127.0.0.1:{site.port + 1}",))
    refused = await fetch(f"http://127.0.0.1:{site.port}/html", other_port)
    assert not refused.ok and "a loopback address" in refused.content
    by_name = await fetch(f"http://localhost:{site.port}/html", WebSettings())
    assert not by_name.ok and f"web_fetch refused to connect to localhost:{site.port}" in by_name.content
    slow = await fetch(
        f"http://127.0.0.1:{site.port}/slow", WebSettings(allow_private_hosts=("127.0.0.1",), timeout=0.5)
    )
    assert not slow.ok and "took longer than 0.5 s (CODY_WEB_FETCH_TIMEOUT_SECONDS)" in slow.content
    assert site.hits == ["/slow"]  # nothing else reached the site


async def test_dns_rebinding_cannot_reach_a_local_service(site: Site, monkeypatch):
    """A name that resolves to a public address and to 127.0.0.1 is refused whole; one whose answer
    changes between lookups is connected to at the address checked, never looked up again."""
    loop = asyncio.get_running_loop()
    answers = {"rebind.example": ["93.184.215.14", "127.0.0.1"]}
    lookups: list[str] = []

    async def getaddrinfo(host: str, port: int, *args: Any, **kwargs: Any) -> list[Any]:
        lookups.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in answers[host]]

    monkeypatch.setattr(loop, "getaddrinfo", getaddrinfo)
    mixed = await fetch(f"http://rebind.example:{site.port}/html", WebSettings())
    assert not mixed.ok and "it is at 127.0.0.1, a loopback address" in mixed.content
    # Allowed by name: the fetch connects to what the check saw (127.0.0.1, the site), once.
    answers["flip.example"] = ["127.0.0.1"]
    allowed = await fetch(f"http://flip.example:{site.port}/html", WebSettings(allow_private_hosts=("flip.example",)))
    assert allowed.ok and "## Hi" in allowed.content
    assert lookups == ["rebind.example", "flip.example"]
    assert site.hits == ["/html"]
