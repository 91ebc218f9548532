"""Settings and fixtures shared by the whole suite."""

import functools
import os
import shutil

import pytest
import torch
from streamlit.components.v2 import manifest_scanner

from deploy.served import CHROMIUM, CHROMIUM_ARGS

# Each new AppTest scans every installed package's metadata for Streamlit components (~0.4 s, a third of a typical
# AppTest's first run, over a thousand times a suite); the installed packages do not change during a run.
manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)

# The app computes with one torch thread per op (app.py); the tests compute as it does. Summation order, and so the
# last bits of a result, depend on the thread count, and AppTest runs app.py inside this process.
torch.set_num_threads(1)


# Debian's chromium, one for the whole session: the browser suite and the classroom tests (tests/serve) share it, as
# Playwright's sync API allows one instance per process.
@pytest.fixture(scope="session")
def chromium_path() -> str:
    if not (os.path.exists(CHROMIUM) or shutil.which("chromium")):
        pytest.skip("Debian's chromium is not installed: run `make browser` (apt-get install chromium)")
    return CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium")


@pytest.fixture(scope="session")
def browser(chromium_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=chromium_path, headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def pytest_collection_modifyitems(items):
    """Mark the tests that drive a browser, from the fixtures they use (so a new one cannot forget it)."""
    for item in items:
        if "chromium_path" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)
