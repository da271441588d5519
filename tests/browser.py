"""Headless Chromium for the browser tests and the README's screenshot: the
system's Chromium (Debian's package), driven by Playwright, never a browser
Playwright downloads."""

import shutil

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# As root in a container Chromium needs --no-sandbox; the rest keep it from
# reaching for the network (updates, sync, QUIC probes) on a closed machine.
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]


def launch(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
