"""Fixtures of the AppTest suite (helpers that are not fixtures live in helpers.py)."""

from __future__ import annotations

import pytest
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from streamlit.testing.v1 import app_test


class MediaFiles:
    """Keeps the media managers AppTest creates per run, so a test can read what a download button serves, as a click
    would: a button with deferred data (a callable) has its callable run by the manager that registered it."""

    def __init__(self) -> None:
        self.managers: list[tuple[MediaFileManager, MemoryMediaFileStorage]] = []

    def make_manager(self, storage: MemoryMediaFileStorage) -> MediaFileManager:
        manager = MediaFileManager(storage)
        self.managers.append((manager, storage))
        return manager

    def file(self, button):
        """What a click on this st.download_button would save: .content (bytes), .filename, .mimetype."""
        for manager, storage in reversed(self.managers):  # the latest run that served it
            try:
                url = button.proto.url or manager.execute_deferred(button.proto.deferred_file_id)
                return storage.get_file(url.rsplit("/", 1)[-1])
            except Exception:  # not this run's: look in an earlier one
                continue
        raise LookupError(f"no run served the file of {button.proto.id}")

    def content(self, button) -> bytes:
        return bytes(self.file(button).content)


@pytest.fixture
def media(monkeypatch) -> MediaFiles:
    files = MediaFiles()
    monkeypatch.setattr(app_test, "MediaFileManager", files.make_manager)
    return files
