"""A Streamlit script served on a loopback port, and Debian's chromium: how the classroom (deploy/serve.py) starts,
watches and stops its replicas, and how the browser tests and the benchmarks start, wait for and stop a server
(Playwright drives the system's chromium and never downloads a browser). Here, not under tests/, so that a deploy
script depends on nothing in the test tree."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

# Page conditions a browser waits on (with Playwright's wait_for_function).
# At least n charts on the page, and every chart drawn holds its data (n: the argument).
CHARTS_READY = """n => document.querySelectorAll('.js-plotly-plot').length >= n &&
    Array.from(document.querySelectorAll('.js-plotly-plot')).every(g => g._fullData && g._fullData.length)"""
# No script running: Streamlit's status widget is gone; and no page waits to draw what it deferred (a new visit to the
# lab draws its first chart, then reruns itself whole: explorer.lab.first_view marks the wait).
SCRIPT_IDLE = """() => !document.querySelector('[data-testid="stStatusWidget"]')
    && !document.querySelector('.view-pending')"""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def die_with_parent() -> None:
    """In a child between fork and exec (Popen's preexec_fn): ask Linux for SIGTERM when the parent dies, so a
    parent killed outright (SIGKILL, no clean-up) leaves no server behind."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class StreamlitServer:
    """`streamlit run script` from the script's folder (its .streamlit/config.toml applies) on a loopback port, in a
    process group of its own so that stop() ends it whole; restartable on the same port. Each start logs to a file
    of its own in log_dir."""

    def __init__(
        self, log_dir: Path, *, script: Path = REPO / "app.py", port: int | None = None, env: dict | None = None
    ) -> None:
        self.script = script
        self.port = port or free_port()
        self.env = env  # added to this process's environment (e.g. a cookie secret shared by replicas)
        self.die_with_parent = False  # True: the server gets SIGTERM when the process that started it dies
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_dir = log_dir
        self.process: subprocess.Popen | None = None
        self.starts = 0

    def start(self, timeout: float = 90) -> None:
        """Start it, and return once it answers its health check (a page's first run, which imports torch, comes
        later: wait for that on the page)."""
        self.launch()
        self.wait_until_healthy(timeout)

    def launch(self) -> None:
        """Start the process and return at once (several servers start side by side, then each is waited for)."""
        self.starts += 1
        with open(self.log_dir / f"streamlit-{self.port}-{self.starts}.log", "wb") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "streamlit",
                    "run",
                    self.script.name,
                    "--server.port",
                    str(self.port),
                    "--server.address",
                    "127.0.0.1",
                    "--server.headless",
                    "true",
                    "--browser.gatherUsageStats",
                    "false",
                    "--server.fileWatcherType",
                    "none",
                    # the endpoint warm_up() asks: one run of app.py in a session of Streamlit's own
                    "--server.scriptHealthCheckEnabled",
                    "true",
                ],
                cwd=self.script.parent,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                env=None if self.env is None else os.environ | self.env,
                preexec_fn=die_with_parent if self.die_with_parent else None,
            )

    def wait_until_healthy(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError(f"streamlit exited with {self.process.returncode}: {self.log_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as answer:
                    if answer.read().strip() == b"ok":
                        return
            except OSError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"streamlit did not answer on port {self.port} within {timeout:.0f} s")

    def warm_up(self, timeout: float = 90) -> bool:
        """Run app.py once, as a first visit would, before anyone visits: torch imported, the overview's layers built,
        and Streamlit's pages/ folder mode left (a fresh server's first link otherwise runs in it: a menu of file
        names, or its English "Page not found" dialog). Streamlit's script health check does that run, in a session
        of its own (an endpoint it marks experimental: False if it is missing or the run failed)."""
        try:
            with urllib.request.urlopen(f"{self.url}/_stcore/script-health-check", timeout=timeout) as answer:
                return answer.read().strip() == b"ok"
        except OSError:
            return False

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if not self.alive():
                return
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.process.wait(timeout=15)
                return
            except subprocess.TimeoutExpired:
                continue

    def restart(self, timeout: float = 90) -> None:
        self.stop()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the port is free again once the old process is gone
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    time.sleep(0.2)
            except OSError:
                break
        self.start(timeout)

    def log_text(self) -> str:
        return "\n".join(
            path.read_text(errors="replace") for path in sorted(self.log_dir.glob(f"streamlit-{self.port}-*.log"))
        )
