"""The app's style sheet reaches the browser: st.html's sanitiser (DOMPurify) drops a whole <style> element whose text
holds a less-than sign followed by a letter, and every rule in it with it (the page links went back to one cut line)."""

from __future__ import annotations

import re

from explorer.state import APP_CSS


def test_the_style_sheet_holds_nothing_the_sanitiser_would_drop_it_for():
    assert not re.search(r"<[/\w]", APP_CSS)
