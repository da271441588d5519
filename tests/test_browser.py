"""The page in real headless Chromium: a question answered live, charts and
stopwatches filled, markup inert, nothing fetched from outside, the CSP kept.

Skipped with a reason when Chromium is missing, except in CI (CI=true), where
a missing browser is a failure: .ci/run installs Debian's chromium package.
"""

import http.server
import json
import os
import re
import threading
from types import SimpleNamespace
from urllib.parse import quote, urlsplit

import pytest

from .browser import CHROMIUM, launch
from .conftest import running_server, slow_down
from .http import request

if not CHROMIUM and os.environ.get("CI"):
    pytest.fail("Chromium is missing in CI: .ci/run should have installed Debian's chromium", pytrace=False)
pytestmark = pytest.mark.skipif(not CHROMIUM, reason="no Chromium on this machine: apt-get install chromium")
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (requirements-dev.txt)")
expect = sync_api.expect
PROMPT = "Why is the sky blue?"  # 20 bytes, 20 tokens


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        chromium = launch(p)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, live_server):
    """A page on the live server. CSP is bypassed so the test can read the
    charts' data with page.evaluate; test_the_page_keeps_its_own_csp runs without."""
    context = browser.new_context(bypass_csp=True, viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
    page.goto(live_server.http + "/")
    expect(page.locator("#send")).to_be_enabled()
    yield page
    context.close()


def ask(page, prompt, max_tokens):
    page.fill("#prompt", prompt)
    page.fill("#max-tokens", str(max_tokens))
    page.press("#prompt", "Enter")


def test_a_question_answered_live(page, live_server):
    ask(page, PROMPT, 24)
    expect(page.locator("#status")).to_have_text(re.compile(r"^done: 24 tokens"))
    page.wait_for_function("() => document.getElementById('timeline').data[3].x.length === 24")  # charts drawn
    timeline = page.evaluate("() => document.getElementById('timeline').data.map(t => t.x.length)")
    read_bar = page.evaluate("() => document.getElementById('timeline').data[1].x[0]")
    # wait, read, chop; one decode tick and one arrival tick per token; the bus size at each step
    assert timeline == [1, 1, 1, 24, 24, 24]
    assert read_bar > 0
    assert page.evaluate("() => document.getElementById('timeline').data[5].y") == [1] * 24  # alone on the bus
    per_token = live_server.engine.model.config.kv_bytes_per_token
    kv_last = page.evaluate("() => { const d = document.getElementById('kvchart').data[0]; return [d.x.at(-1), d.y.at(-1)]; }")
    assert kv_last[0] == 20 + 23  # the prompt and 23 decoded tokens held when the last token came out
    assert kv_last[1] * 1024 * 1024 == pytest.approx((20 + 23) * per_token)
    floor = page.evaluate("() => document.getElementById('floorchart').data.map(t => [t.x.length, [...new Set(t.y)]])")
    assert floor[1][0] == 24 and floor[1][1] == [1] and floor[0][0] == 0  # alone: seat 1, every step
    factory_last = page.evaluate("() => document.getElementById('kvchart').data[3].y.at(-1)")
    assert factory_last == pytest.approx(kv_last[1])  # alone, the factory holds just this notebook
    assert page.locator("#chips .chip").count() == 20
    assert page.inner_text("#answer-count") == "24 tokens"
    ttft = page.locator("#stopwatches tbody tr").first.locator("td")
    assert all(re.fullmatch(r"[\d.]+ ms", ttft.nth(i).inner_text()) for i in (0, 1))
    factory = page.locator("#stopwatches tbody tr").last
    assert "whole factory" in factory.inner_text() and re.search(r"[\d.]+ tok/s", factory.inner_text())
    rows = page.locator("#results tbody tr")
    assert rows.count() == 1 and rows.first.locator("td").first.inner_text() == "20"
    assert page.errors == []


def test_multibyte_characters_show_split_over_their_tokens(page):
    ask(page, "é🙂", 2)
    expect(page.locator("#status")).to_have_text(re.compile(r"^done"))
    groups = page.locator("#chips .char-group")
    assert groups.count() == 2
    assert groups.nth(0).locator(".chip").count() == 2 and groups.nth(1).locator(".chip").count() == 4
    assert groups.nth(0).locator(".char").inner_text() == "é = 2 tokens"


def test_markup_in_a_prompt_stays_text(page):
    attack = '<img src=x onerror="window.__pwned = 1"><script>window.__pwned = 2</script>'
    ask(page, attack, 8)
    expect(page.locator("#status")).to_have_text(re.compile(r"^done"))
    assert page.locator("#chips img, #chips script, #answer *").count() == 0
    assert "".join(page.locator("#chips .piece").all_inner_texts()).replace("␣", " ") == attack
    assert page.evaluate("() => window.__pwned") is None


def test_cancel_stops_the_answer(page, live_server, monkeypatch):
    slow_down(monkeypatch, live_server.engine.model, seconds=0.02)
    ask(page, PROMPT, 100)
    expect(page.locator("#answer-count")).to_have_text(re.compile(r"\d+ tokens"))
    page.click("#cancel")
    expect(page.locator("#status")).to_have_text("cancelled")
    assert page.locator("#results tbody tr").count() == 0  # a cancelled run is no result
    expect(page.locator("#send")).to_be_enabled()


def test_bad_input_is_shown_not_thrown(page):
    ask(page, "", 5)
    expect(page.locator("#status")).to_have_text(re.compile("prompt is empty"))
    expect(page.locator("#status")).to_have_class(re.compile("error"))
    ask(page, PROMPT, 2)  # and the page carries on
    expect(page.locator("#status")).to_have_text(re.compile(r"^done"))


def test_nothing_leaves_localhost(browser, live_server):
    context = browser.new_context()
    page = context.new_page()
    urls = []
    page.on("request", lambda r: urls.append(r.url))
    page.on("websocket", lambda ws: urls.append(ws.url))
    page.goto(live_server.http + "/")
    expect(page.locator("#send")).to_be_enabled()
    ask(page, PROMPT, 4)
    expect(page.locator("#status")).to_have_text(re.compile(r"^done"))
    context.close()
    assert any(u.startswith("ws://") for u in urls) and any(u.endswith("plotly.min.js") for u in urls)
    assert {urlsplit(u).hostname for u in urls} == {"127.0.0.1"}


def test_the_page_keeps_its_own_csp(browser, live_server):
    """No bypass here: the page runs under its real Content-Security-Policy."""
    context = browser.new_context()
    page = context.new_page()
    problems = []
    page.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(live_server.http + "/")
    expect(page.locator("#send")).to_be_enabled()
    ask(page, PROMPT, 6)
    expect(page.locator("#status")).to_have_text(re.compile(r"^done"))
    context.close()
    assert problems == []


def test_phone_width_needs_no_sideways_scrolling(browser, live_server):
    context = browser.new_context(bypass_csp=True, viewport={"width": 390, "height": 844}, is_mobile=True)
    page = context.new_page()
    page.goto(live_server.http + "/")
    expect(page.locator("#send")).to_be_enabled()
    ask(page, PROMPT, 4)
    expect(page.locator("#status")).to_have_text(re.compile(r"^done"))
    overflow = page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
    context.close()
    assert overflow <= 0


def test_a_remote_engine_is_timed_and_its_unseen_parts_named(browser):
    with running_server({"MODEL": "tiny"}) as remote, \
            running_server({"REMOTE_BASE_URL": remote.http + "/v1", "REMOTE_MODEL": "tiny"}) as front:
        context = browser.new_context(bypass_csp=True)
        page = context.new_page()
        page.goto(front.http + "/")
        expect(page.locator("#send")).to_be_enabled()
        assert "a remote engine" in page.inner_text(".note") and page.locator("#kvchart").count() == 0
        ask(page, PROMPT, 10)
        expect(page.locator("#status")).to_have_text(re.compile(r"^done: 10 tokens"))
        page.wait_for_function("() => document.getElementById('timeline').data[3].x.length === 10")
        assert page.inner_text("#chip-count") == "chopped inside the remote engine, unseen"
        assert page.inner_text("#answer-count") == "10 tokens"
        context.close()


def test_charts_follow_the_visitors_colour_scheme(page):
    ask(page, PROMPT, 4)
    expect(page.locator("#status")).to_have_text(re.compile(r"^done"))
    fonts = "() => ['timeline', 'floorchart', 'kvchart'].map(id => document.getElementById(id)._fullLayout.font.color)"
    light = page.evaluate(fonts)
    page.emulate_media(color_scheme="dark")
    page.wait_for_function(f"() => ({fonts})().every(c => c !== {light[0]!r})")
    dark = page.evaluate(fonts)
    assert len(set(light)) == len(set(dark)) == 1 and light != dark
    assert page.errors == []


@pytest.fixture
def other_site():
    """A page of another origin (another port) with whatever HTML a test sets."""
    pages = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 -- the stdlib's name
            body = pages.get(self.path, "").encode()
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield SimpleNamespace(url=f"http://127.0.0.1:{server.server_port}", pages=pages)
    server.shutdown()
    server.server_close()


def shared_run(page, prompt, max_tokens):
    """Ask on the live page, press Share; the run's link and its answer."""
    ask(page, prompt, max_tokens)
    expect(page.locator("#status")).to_have_text(re.compile(rf"^done: {max_tokens} tokens"))
    page.click("#share-button")
    expect(page.locator("#status")).to_have_text(re.compile("link copied|link is selected"))
    return page.input_value("[data-share-link]"), page.inner_text("#answer")


def test_an_embed_on_another_site_streams_and_fits_its_frame(browser, page, live_server, other_site):
    """The page's own copy-paste snippet on a blog of another origin, pointed at a live question."""
    link, _ = shared_run(page, PROMPT, 4)
    snippet = page.input_value("#embed-snippet")
    src = re.search(r'src="([^"]+)"', snippet)[1]
    oembed = json.loads(request(f"{live_server.http}/oembed?url={quote(link)}")[2])
    assert f'width="{oembed["width"]}" height="{oembed["height"]}"' in snippet  # one size, however it is embedded
    live = f"{live_server.http}/embed?prompt={quote(PROMPT)}&max_tokens=16&autoplay=1&theme=dark"
    other_site.pages["/post"] = f"<!doctype html><title>A blog</title><link rel=icon href=data:,><h1>My post</h1>{snippet.replace(src, live)}"
    context = browser.new_context()  # the real CSP of the embed; the blog itself has none
    blog = context.new_page()
    problems = []
    blog.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
    blog.goto(other_site.url + "/post")
    frame = blog.frame_locator("iframe")
    expect(frame.locator("#status")).to_have_text(re.compile(r"^done: 16 tokens"), timeout=15000)
    assert len(frame.locator("#answer").inner_text()) > 0
    # the frame told the blog its height and the snippet's listener applied it
    blog.wait_for_function("() => document.querySelector('iframe').style.height.endsWith('px')")
    frame_height = blog.evaluate("() => parseInt(document.querySelector('iframe').style.height)")
    content_height = frame.locator("html").evaluate("e => Math.ceil(e.getBoundingClientRect().height)")
    assert frame_height == content_height > 300
    context.close()
    assert problems == []


def test_a_shared_run_replays_the_same_in_a_fresh_browser(browser, page, live_server):
    link, answer = shared_run(page, PROMPT, 30)
    assert link.startswith(live_server.http + "/r/")
    for finish in ("#to-end", "#play"):
        context = browser.new_context(bypass_csp=True)
        replay = context.new_page()
        errors = []
        replay.on("pageerror", lambda e, seen=errors: seen.append(str(e)))
        replay.goto(link)
        expect(replay.locator("#status")).to_have_text(re.compile("sharer's browser clock"))
        if finish == "#play":
            replay.select_option("#speed", "4")
        replay.click(finish)
        expect(replay.locator("#status")).to_have_text(re.compile(r"^done: 30 tokens"))
        expect(replay.locator("#play")).to_have_text("Replay")
        assert replay.inner_text("#answer") == answer
        replay.wait_for_function("() => document.getElementById('timeline').data[3].x.length === 30")
        ticks = replay.evaluate("() => document.getElementById('timeline').data.map(t => t.x.length)")
        assert ticks[3:5] == [30, 30]  # the server's ticks and the sharer's browser's
        axis = replay.evaluate("() => document.getElementById('timeline')._fullLayout.xaxis.title.text")
        assert axis == "ms since the question was sent"  # no Enter was pressed on this page
        assert replay.locator("#chips .chip").count() == 20
        context.close()
        assert errors == []
