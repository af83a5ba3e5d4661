"""Drive Debian's chromium (not Playwright's own browser download) through Playwright's Python package.

Used by tests/test_explain_browser.py, and run as a script to refresh the docs' screenshot of the
explain page:  .venv/bin/python tests/browser.py docs/img/explain_adc_chain.png
(`tests/browser.py schedule` refreshes the `explain --schedule` page's, explain_schedule_19.png)
"""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile

CHROMIUM = os.environ.get("PREEMU_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1440, "height": 900}       # a laptop screen


@contextlib.contextmanager
def page():
    """Yield (page, errors): a fresh headless chromium page and the list its console errors go to."""
    from playwright.sync_api import sync_playwright
    if not os.access(CHROMIUM, os.X_OK):
        raise RuntimeError(f"{CHROMIUM} not found: `make test` installs Debian's chromium (apt-get install chromium)")
    profile = tempfile.mkdtemp(prefix="preemu-chromium-")
    try:
        with sync_playwright() as p:
            ctx = p.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True, args=FLAGS,
                                                       viewport=VIEWPORT)
            try:
                pg = ctx.new_page()
                errors: list[str] = []
                pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
                pg.on("pageerror", lambda e: errors.append(str(e)))
                yield pg, errors
            finally:
                ctx.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def screenshot(out: str) -> None:
    """Write the docs' screenshot: adc_chain's explain page at its "save" step."""
    with tempfile.TemporaryDirectory() as d:
        html = os.path.join(d, "explain.html")
        subprocess.run([sys.executable, "-m", "emu", "explain", "asm/adc_chain.s", "--func", "adc_chain",
                        "--reg", "RCX=64", "--at", "5", "--html", html], check=True, stdout=subprocess.DEVNULL)
        with page() as (pg, errors):
            pg.goto("file://" + html)
            for _ in range(7):
                pg.keyboard.press("ArrowRight")
            pg.screenshot(path=out)
            if errors:
                raise SystemExit(f"console errors: {errors}")


def schedule_screenshot(out: str) -> None:
    """Write the docs' screenshot of `explain --schedule 19 --html`, change point 2 selected."""
    with tempfile.TemporaryDirectory() as d:
        html = os.path.join(d, "schedule.html")
        subprocess.run([sys.executable, "-m", "emu", "explain", "tests/go/pctlock/lock", "--test", "TestRacyLock",
                        "--schedule", "19", "--html", html], stdout=subprocess.DEVNULL)
        with page() as (pg, errors):
            pg.goto("file://" + html)
            pg.keyboard.press("ArrowRight")
            pg.screenshot(path=out)
            if errors:
                raise SystemExit(f"console errors: {errors}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "schedule":
        schedule_screenshot(sys.argv[2] if len(sys.argv) > 2 else "docs/img/explain_schedule_19.png")
    else:
        screenshot(sys.argv[1] if len(sys.argv) > 1 else "docs/img/explain_adc_chain.png")
