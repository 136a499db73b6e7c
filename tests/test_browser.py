"""The HTML reports in a real headless browser (tests/browser.py): the lab
report (`fabriclab lab run --html`) and the telemetry dashboard
(`fabriclab dashboard`) load with no console error, every image decodes
with a size, every table lays out, and a screenshot is a non-empty PNG.
Skipped, saying why, where no chromium can be found."""

from __future__ import annotations

import pytest

import fabriclab
from browser import assert_renders, browser_or_skip, check_page
from fabriclab.lab_html import write_report
from fabriclab.lab_runs import run_lab

pytest.importorskip("matplotlib")


def test_lab_report_renders_in_a_browser(tmp_path):
    browser_or_skip()
    results = [run_lab("heps", quick=True), run_lab("stackhpc-pingpong", quick=True)]
    path = write_report(results, tmp_path / "labs.html")
    check = check_page(path)
    assert check.title == "fabriclab labs"
    # the index, and one verdict table per lab; the ping-pong chart
    assert_renders(check, min_images=1, min_tables=3)
    (tmp_path / "labs.png").write_bytes(check.screenshot_png)


def test_dashboard_renders_in_a_browser(tmp_path):
    browser_or_skip()
    res = fabriclab.flows([fabriclab.Flow(f"h{i}", "h0", 1 << 20) for i in (4, 5, 8, 9)], fabric="leaf-spine", sample_us=10)
    path = fabriclab.dashboard(res.port_samples, tmp_path / "dash.html", fabric="leaf-spine", title="4:1 incast")
    check = check_page(path)
    assert check.title == "4:1 incast"
    assert_renders(check, min_images=5, min_tables=1)  # five figures, the busiest-ports table
