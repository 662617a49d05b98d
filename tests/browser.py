"""Headless Chromium for the report's browser tests and screenshots (test machinery, not
shipped): Debian's ``chromium`` and ``chromium-driver`` packages driven by Selenium, the
network off (no DNS, offline network emulation) and every request the page makes recorded
from Chromium's performance log.

``python -m tests.browser PAGE.html OUT.png [--width 1400] [--height 900] [--search NAME]
[--element CSS] [--full]`` takes a screenshot (the first screen, one element, or the whole
page).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "CHROMIUM",
    "CHROMEDRIVER",
    "available",
    "chromium",
    "open_page",
    "requests_made",
    "console_errors",
]

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
#: headless and quiet: no GPU, no sandbox (root in CI), no network of its own
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--host-resolver-rules=MAP * ~NOTFOUND",
)  # fmt: skip


def available() -> bool:
    """Whether Chromium, its driver and Selenium are installed."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return False
    return Path(CHROMIUM).is_file() and Path(CHROMEDRIVER).is_file()


@contextlib.contextmanager
def chromium(width: int = 1400, height: int = 900) -> Iterator[Any]:
    """A headless Chromium (Selenium ``WebDriver``) with an empty profile, the window
    ``width`` × ``height`` CSS pixels, the network emulated offline; quit on exit."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="voirdire-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for f in (*FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"):
        opts.add_argument(f)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(
        service=Service(executable_path=CHROMEDRIVER), options=opts
    )
    try:
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd(
            "Network.emulateNetworkConditions",
            {
                "offline": True,
                "latency": 0,
                "downloadThroughput": 0,
                "uploadThroughput": 0,
            },
        )
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def open_page(driver: Any, page: Path, timeout: float = 120.0) -> None:
    """Load ``page`` (a file) and wait until every figure is drawn (``data-figures-ready``)."""
    driver.get(Path(page).resolve().as_uri())
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if (
            driver.execute_script(
                "return document.body && document.body.getAttribute('data-figures-ready')"
            )
            == "1"
        ):
            return
        time.sleep(0.2)
    raise TimeoutError(f"{page}: figures not drawn within {timeout:.0f} s")


#: the schemes of Chromium's own pages and UI (its tab strip's favicons, tooltips, the start
#: page): requests the browser makes for itself, never the page; Chromium versions differ in
#: which of them reach the performance log
BROWSER_SCHEMES = frozenset(
    {"chrome", "chrome-untrusted", "chrome-extension", "chrome-search", "devtools"}
)


def requests_made(driver: Any) -> list[str]:
    """The URLs of every request the page has made since the last call (performance log);
    the browser's requests for its own UI (``BROWSER_SCHEMES``) are not the page's."""
    urls = []
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg.get("method") == "Network.requestWillBeSent":
            url = msg["params"]["request"]["url"]
            if url.split(":", 1)[0].lower() not in BROWSER_SCHEMES:
                urls.append(url)
    return urls


def console_errors(driver: Any) -> list[str]:
    """The console's messages of level SEVERE since the last call."""
    return [
        e["message"] for e in driver.get_log("browser") if e.get("level") == "SEVERE"
    ]


def _main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("page", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--height", type=int, default=900)
    ap.add_argument("--search", default="")
    ap.add_argument("--element", default="")
    ap.add_argument(
        "--index", type=int, default=0, help="which element matching --element"
    )
    ap.add_argument("--full", action="store_true")
    a = ap.parse_args()
    from selenium.webdriver.common.by import By

    with chromium(a.width, a.height) as d:
        open_page(d, a.page)
        if a.search:
            box = d.find_element(By.ID, "judge-search")
            box.send_keys(a.search)
            time.sleep(1.0)
        if a.element:
            el = d.find_elements(By.CSS_SELECTOR, a.element)[a.index]
            d.execute_script(
                "arguments[0].scrollIntoView(); window.scrollBy(0, -70)", el
            )
            time.sleep(0.5)
            el.screenshot(str(a.out))
        elif a.full:
            h = d.execute_script("return document.body.scrollHeight")
            d.set_window_size(a.width, min(h, 16000))
            d.save_screenshot(str(a.out))
        else:
            d.save_screenshot(str(a.out))
        errs = console_errors(d)
        if errs:
            print("console errors:", *errs, sep="\n  ")
    print(a.out)


if __name__ == "__main__":
    _main()
