"""`python -m tests.screenshot`: the README's picture of the page mid-answer.

Starts `python -m app` (the embedded default model) on a free loopback port,
asks the seed's 256-token question in headless Chromium, and saves a
full-page screenshot while the Typewriter is still typing.

A visitor's browser runs on their own machine; here it shares two cores with
the server, and a busy renderer stalls the engine's two-thread matrix
products badly. So the two are kept apart: the server on core 0 with one
BLAS thread, the browser on core 1. The figures shown are therefore the
engine's single-core ones.
"""

import argparse
import os
import subprocess
import sys
import time

from playwright.sync_api import expect, sync_playwright

from .browser import launch
from .reliability.server import free_port


def typed(page) -> int:
    """Tokens shown so far, from the answer's counter ("12 tokens")."""
    count = page.inner_text("#answer-count").split()
    return int(count[0]) if count else 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tests.screenshot", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="docs/screenshot.png")
    p.add_argument("--model", default="gpt2-small")
    p.add_argument("--tokens-before-shot", type=int, default=40)
    args = p.parse_args(argv)

    port = free_port()
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    server = subprocess.Popen([sys.executable, "-m", "app", "--port", str(port), "--model", args.model],
                              env=env, stdout=subprocess.PIPE, text=True,
                              preexec_fn=lambda: os.sched_setaffinity(0, {0}))
    try:
        assert "serving" in server.stdout.readline(), "the app did not start"
        os.sched_setaffinity(0, {1})  # Playwright's driver and Chromium inherit this
        with sync_playwright() as pw:
            browser = launch(pw)
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.goto(f"http://127.0.0.1:{port}/")
            expect(page.locator("#send")).to_be_enabled()
            time.sleep(2)  # let the browser finish compiling plotly.js
            page.click("[data-preset='256']")
            page.fill("#max-tokens", "64")
            page.press("#prompt", "Enter")
            deadline = time.monotonic() + 60
            while typed(page) < args.tokens_before_shot:
                assert time.monotonic() < deadline, "the answer did not get far enough in 60 s"
                page.wait_for_timeout(20)
            page.screenshot(path=args.out, full_page=True)
            browser.close()
    finally:
        server.terminate()
        server.wait(10)
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
