"""An absent model is told apart by class: its package not installed, or its file missing from the package."""

from __future__ import annotations

import importlib.metadata
from typing import ClassVar

import pytest

from attn_core.pretrained import ModelFileMissing, ModelNotInstalled, ModelPackageMissing, gguf_path


def test_an_absent_package_is_model_package_missing(monkeypatch):
    def not_found(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", not_found)
    with pytest.raises(ModelPackageMissing, match="pip install"):
        gguf_path()


def test_a_package_without_its_file_is_model_file_missing(monkeypatch):
    class Empty:
        files: ClassVar[list] = []

    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: Empty())
    with pytest.raises(ModelFileMissing, match="reinstall"):
        gguf_path()


def test_both_are_model_not_installed():
    assert issubclass(ModelPackageMissing, ModelNotInstalled)
    assert issubclass(ModelFileMissing, ModelNotInstalled)
