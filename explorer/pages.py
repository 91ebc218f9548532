"""The app's pages, in menu order: one table that app.py navigates and the overview links to."""
from __future__ import annotations

from typing import NamedTuple


class PageEntry(NamedTuple):
    path: str
    title: str
    icon: str
    teaser: str


PAGES: dict[str, PageEntry] = {
    "overview": PageEntry("pages/overview.py", "Overview", ":material/dashboard:", "The four variants side by side."),
}
