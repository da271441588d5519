"""The security phase's checks in real Chromium (the system's, as in the
browser tests): a stored run of markup, control characters and bidi
overrides replays inertly on /r/<id> and /embed, under the pages' own CSP,
with no console errors and no request the markup tried to make."""

import re

from ..browser import CHROMIUM, launch


def render_inertly(server, phase, run_id: str, nasty: str):
    if not CHROMIUM:
        phase.figures["browser checks"] = "skipped: no Chromium (apt-get install chromium)"
        return
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as pw:
        browser = launch(pw)
        context = browser.new_context()  # no CSP bypass: the pages run under their real policy
        for path in (f"/r/{run_id}", f"/embed?run={run_id}"):
            page = context.new_page()
            problems, requests = [], []
            page.on("console", lambda m, seen=problems: seen.append(m.text) if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e, seen=problems: seen.append(str(e)))
            page.on("request", lambda r, seen=requests: seen.append(r.url))
            page.goto(server.http + path)
            page.click("#to-end")
            expect(page.locator("#status")).to_have_text(re.compile("^done"))
            answer = page.locator("#answer").text_content()
            elements = page.locator("#answer *, .prompt *, .prompt-line *").count()
            fired = [u for u in requests if "pwned" in u]
            page.close()
            name = path.split("?")[0].split("/")[1] or path
            phase.check(f"{name}: the answer is the stored text, character for character", answer == nasty)
            phase.check(f"{name}: no element made from the text, nothing it tried to fetch",
                        elements == 0 and not fired, f"{elements} elements, requests {fired}")
            phase.check(f"{name}: no console errors or CSP violations", not problems, "; ".join(problems)[:200])
        context.close()
        browser.close()
