"""A new visit to the lab (explorer.lab.first_view): its first run stops after the first chart, and the rest of the
page follows by itself, with no press, in the browser's next run. How much sooner the first chart comes is
benchmarks/browser.py --only-visits --page lab (a ratio, never a timed assert)."""

from __future__ import annotations

from .conftest import VIEW_SECONDS, browser_context, wait_for_app


def test_the_rest_of_the_lab_follows_its_first_chart_unasked(server, browser):
    context = browser_context(browser, viewport={"width": 1400, "height": 1000})
    try:
        tab = context.new_page()
        tab.set_default_timeout(VIEW_SECONDS * 1000)
        tab.goto(f"{server.url}/lab?lang=en")
        wait_for_app(tab, 1)
        # below the fold, drawn by the rerun the first run's timer asks for: the every-axis section and the heal's
        tab.get_by_role("heading", name="Every axis at once: which cut hurts least?").wait_for()
        tab.get_by_text("Heal it live").first.wait_for()
        wait_for_app(tab, 3)  # the Pareto chart, healed up close, every axis
        assert tab.locator('[data-testid="stException"]').count() == 0
    finally:
        context.close()
