"""Open an HTML report in a real headless browser and report what it saw.

Chromium (Debian's ``chromium`` and ``chromium-driver`` packages, which
``.ci/run`` installs) driven by selenium with the system chromedriver:
the page loads from a file: URL, then :func:`check_page` collects the
console messages at SEVERE level, every ``<img>``'s natural size, every
table's row count and height, and a screenshot of the whole page.
:func:`browser_or_skip` skips the calling test, saying why, when no
browser (or no selenium) can be found. Left out: other browsers, and any
network access (the pages are self-contained).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

_BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
_DRIVERS = ("chromedriver",)
#: How long a page may take to load, seconds.
LOAD_TIMEOUT_S = 60


def _which(names: tuple[str, ...], env: str) -> str | None:
    if os.environ.get(env):
        return os.environ[env]
    for n in names:
        path = shutil.which(n) or (f"/usr/lib/chromium/{n}" if os.path.exists(f"/usr/lib/chromium/{n}") else None)
        if path:
            return path
    return None


def browser_or_skip() -> tuple[str, str]:
    """(browser binary, chromedriver) or skip the test with the reason."""
    browser = _which(_BROWSERS, "FABRICLAB_CHROMIUM")
    driver = _which(_DRIVERS, "FABRICLAB_CHROMEDRIVER")
    if browser is None or driver is None:
        missing = " and ".join(n for n, p in (("chromium", browser), ("chromedriver", driver)) if p is None)
        pytest.skip(
            f"no headless browser: {missing} not found (apt-get install chromium chromium-driver, "
            "as .ci/run does; or set FABRICLAB_CHROMIUM / FABRICLAB_CHROMEDRIVER)"
        )
    try:
        import selenium  # noqa: F401
    except ImportError:
        pytest.skip("no selenium: pip install '.[test]' (the browser checks drive chromium with it)")
    return browser, driver


@dataclass
class PageCheck:
    """What the browser saw of one page."""

    title: str
    severe: list[dict[str, Any]] = field(default_factory=list)  # console messages at SEVERE level
    images: list[dict[str, Any]] = field(default_factory=list)  # complete, naturalWidth, naturalHeight, alt
    tables: list[dict[str, Any]] = field(default_factory=list)  # rows, height
    screenshot_png: bytes = b""


def check_page(path: str | os.PathLike[str]) -> PageCheck:
    """Load ``path`` in headless Chromium and collect what it rendered
    (skips the test if no browser is found)."""
    browser, driver_path = browser_or_skip()
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait

    options = Options()
    options.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,1600"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    try:
        driver.set_page_load_timeout(LOAD_TIMEOUT_S)
        driver.get(Path(path).resolve().as_uri())
        WebDriverWait(driver, LOAD_TIMEOUT_S).until(
            lambda d: d.execute_script(
                "return document.readyState === 'complete' && Array.from(document.images).every(i => i.complete)"
            )
        )
        images = driver.execute_script(
            "return Array.from(document.images).map(i => ({complete: i.complete, "
            "naturalWidth: i.naturalWidth, naturalHeight: i.naturalHeight, alt: i.alt}))"
        )
        tables = driver.execute_script(
            "return Array.from(document.querySelectorAll('table')).map(t => ({rows: t.rows.length, "
            "height: t.getBoundingClientRect().height}))"
        )
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(1200, min(max(int(height), 600), 16000))
        png = driver.get_screenshot_as_png()
        severe = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        return PageCheck(title=driver.title, severe=severe, images=images, tables=tables, screenshot_png=png)
    finally:
        driver.quit()


def assert_renders(check: PageCheck, min_images: int = 1, min_tables: int = 1) -> None:
    """No console error, every image decoded with a size, every table
    laid out with rows, a non-empty PNG screenshot."""
    assert check.severe == [], f"console errors: {check.severe}"
    assert len(check.images) >= min_images, check.images
    for img in check.images:
        assert img["complete"] and img["naturalWidth"] > 0 and img["naturalHeight"] > 0, img
    assert len(check.tables) >= min_tables, check.tables
    for t in check.tables:
        assert t["rows"] >= 2 and t["height"] > 0, t
    assert check.screenshot_png.startswith(b"\x89PNG") and len(check.screenshot_png) > 1000
