"""Fixtures of the AppTest suite (helpers that are not fixtures live in helpers.py)."""
from __future__ import annotations

import pytest
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from streamlit.testing.v1 import app_test

from . import helpers  # noqa: F401  (puts the repository root on sys.path before pages import explorer)


class MediaFiles:
    """Keeps the in-memory media stores AppTest creates per run, so a test can read what a download button serves."""

    def __init__(self) -> None:
        self.stores: list[MemoryMediaFileStorage] = []

    def make_store(self, endpoint: str) -> MemoryMediaFileStorage:
        store = MemoryMediaFileStorage(endpoint)
        self.stores.append(store)
        return store

    def file(self, button):
        """What a click on this st.download_button would save: .content (bytes), .filename, .mimetype."""
        stored_name = button.proto.url.rsplit("/", 1)[-1]
        for store in reversed(self.stores):  # the latest run that served it
            try:
                return store.get_file(stored_name)
            except Exception:  # not in this run's store: look in an earlier one
                continue
        raise LookupError(f"no media file {stored_name} was served")

    def content(self, button) -> bytes:
        return bytes(self.file(button).content)


@pytest.fixture
def media(monkeypatch) -> MediaFiles:
    files = MediaFiles()
    monkeypatch.setattr(app_test, "MemoryMediaFileStorage", files.make_store)
    return files
