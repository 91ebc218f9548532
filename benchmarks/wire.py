"""The wire: what a key press costs between the server and a student's browser, for every page.

    python benchmarks/wire.py              # every page, 6 timed presses per tab
    python benchmarks/wire.py --quick      # CI: heatmaps, 1 press per tab; fails on a crash
    python benchmarks/wire.py --page heatmaps --presses 10

Two `streamlit run app.py` servers on free 127.0.0.1 ports, one with Streamlit's websocket compression off (its
default, `server.enableWebsocketCompression = false`) and one with it on (permessage-deflate), each behind two small
relays on loopback that count the bytes they pass (what goes over the wire, compressed or not): one plain, one
emulating a throttled link (20 Mbit/s down and up, 40 ms round trip: a classroom's Wi-Fi). Chromium's own network
emulation (the DevTools protocol's Network.emulateNetworkConditions, --cdp) was tried first and measured not to slow
the websocket (Chromium 156 headless: a 31 kB heatmaps press at 1 Mbit/s and 300 ms latency took as long as on
loopback), so the link is emulated in the relay, for HTTP and the websocket alike. Debian's chromium, driven by
Playwright, opens every page in four tabs: compression off and on, each on loopback and on the throttled link.
The four tabs press in turn, one
at a time, each the page's own control (benchmarks/classroom.py's PRESSES: a widget the page reads), moving between
two neighbouring values; a first untimed round fills the servers' caches, so every timed press is what a class sees
once its first student has asked for a view (the server's work is drawing and sending, not computing). --quick
presses once in each tab, timed, with no untimed round (a check that every press redraws and compresses: each
press sends a value the tab has not seen, whole, and the first on each server computes it, so only the full run's
bytes and times are a class's).

Per page and tab, the websocket bytes of opening the page, then medians of the timed presses: key press -> first chart drawn with new data (benchmarks/browser.py's
watcher), websocket bytes received by the page (payloads, as Streamlit's frontend gets them), bytes on the wire from
the server (the relay's count, websocket frames and their compression), and the server process's CPU seconds per
press (utime + stime from /proc/PID/stat, over the press until the page is idle again). Printed side by side:
throttled / loopback time per page (issue 26's goal: <= 2x), and compression on / off for bytes on the wire, CPU per
press and throttled time. The load average is printed with the figures: on a shared machine the times are those of a
loaded machine, and only the ratios measured side by side mean much.
Exit status: 0 unless a page or server crashed or a press never redrew a chart.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import queue
import shutil
import signal
import socket
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from browser import BROWSER_IDLE, LIMIT_S, WATCHER, Wire, settle, watch_wire  # noqa: E402

from deploy.served import CHARTS_READY, CHROMIUM, CHROMIUM_ARGS, StreamlitServer, free_port  # noqa: E402
from explorer.pages import PAGES  # noqa: E402
from explorer.settings import Settings  # noqa: E402


@dataclass(frozen=True)
class Link:
    bits_per_s: float
    latency_s: float  # round trip


THROTTLED = Link(20e6, 0.040)  # a classroom's Wi-Fi: 20 Mbit/s down and up, 40 ms round trip
# The same link as Chromium's network emulation (--cdp): measured here not to slow the websocket at all (Chromium
# 156, headless): a heatmaps press of 31 kB at 1 Mbit/s and 300 ms took as long as on loopback.
CDP_THROTTLE = {
    "offline": False,
    "latency": THROTTLED.latency_s * 1000,
    "downloadThroughput": THROTTLED.bits_per_s / 8,
    "uploadThroughput": THROTTLED.bits_per_s / 8,
}
THROTTLED_BUDGET = 2.0  # issue 26: every page's key press -> chart on the throttled link <= 2x its loopback time
COMPRESSION = "STREAMLIT_SERVER_ENABLE_WEBSOCKET_COMPRESSION"  # server.enableWebsocketCompression, as a variable

# The control pressed on each page, as the browser finds it: a slider's thumb (select sliders and int sliders alike
# are an input of type range named by its label), or the lesson's arrow keys (explorer/lesson/keys.js listens on the
# page; its step selectbox follows). Same controls as benchmarks/classroom.py's PRESSES.
PRESS = {  # page -> (the slider's label, the link parameter it writes)
    "overview": ("Sequence length (L, tokens)", "seq_len"),
    "mapping": ("Sequence length (L, tokens)", "seq_len"),
    "kv_cache": ("Batch", "batch"),
    "heatmaps": ("Sequence length (L, tokens)", "seq_len"),
    "trained": ("Layer", "tm_layer"),
    "masks": ("Model width (d_model)", "d_model"),
    "lab": ("Context length for the whole-model cache (tokens)", "lab_context"),
}
KEY_PRESS = {"lesson"}  # pressed with ArrowRight / ArrowLeft on the page itself


# --- a relay that counts bytes -------------------------------------------------------------------------------------
class Relay:
    """A TCP relay on a free loopback port in front of a server, counting the bytes each way; with `link`, a link
    emulated in it: every chunk in either direction is sent on at `link.bits_per_s` (one chunk after another, as a
    link serialises them) and delivered `link.latency_s / 2` later (threads, no asyncio: Playwright's sync API owns
    this thread's event loop). TCP's own slow start over a real 40 ms path is not emulated: a real link is slower
    than this one, if anything."""

    def __init__(self, target_port: int, link: Link | None = None) -> None:
        self.target_port, self.link = target_port, link
        self.port = free_port()
        self.down = 0  # server -> browser
        self.up = 0
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", self.port))
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            for a, b, down in ((client, server, False), (server, client, True)):
                chunks: queue.Queue = queue.Queue()
                threading.Thread(target=self._read, args=(a, chunks, down), daemon=True).start()
                threading.Thread(target=self._write, args=(b, chunks), daemon=True).start()

    def _read(self, source: socket.socket, chunks: queue.Queue, down: bool) -> None:
        try:
            while data := source.recv(16384):
                with self.lock:
                    if down:
                        self.down += len(data)
                    else:
                        self.up += len(data)
                chunks.put((time.monotonic(), data))
        except OSError:
            pass
        chunks.put((time.monotonic(), b""))

    def _write(self, sink: socket.socket, chunks: queue.Queue) -> None:
        free = 0.0  # when the emulated link has sent what it was given so far
        try:
            while True:
                arrived, data = chunks.get()
                if self.link is not None:
                    free = max(free, arrived) + len(data) * 8 / self.link.bits_per_s
                    wait = free + self.link.latency_s / 2 - time.monotonic()
                    if wait > 0:
                        time.sleep(wait)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.closed = True
        self.listener.close()


def cpu_seconds(pid: int) -> float:
    """A process's CPU time so far (user + system), from /proc/PID/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14 and 15)


# --- one tab -------------------------------------------------------------------------------------------------------
@dataclass
class Server:
    name: str  # "off" / "on": compression
    streamlit: StreamlitServer
    relay: Relay  # loopback
    throttled: Relay  # through the emulated link (or loopback too, with --cdp)


@dataclass
class Presses:
    opening: int = 0  # websocket payload bytes the page received while it opened
    drawn_ms: list[float] = field(default_factory=list)
    payload: list[int] = field(default_factory=list)  # websocket payload bytes the page received
    wire: list[int] = field(default_factory=list)  # bytes from the server through the relay
    cpu_s: list[float] = field(default_factory=list)  # the server's CPU seconds over the press


class Tab:
    """One browser tab on a page through a server's relay, throttled or not, pressing the page's control back and
    forth between two neighbouring values."""

    def __init__(self, browser, server: Server, page: str, throttled: bool, cdp: bool = False) -> None:
        self.server, self.page, self.throttled = server, page, throttled
        self.relay = server.throttled if throttled else server.relay
        self.result = Presses()
        self.presses = 0
        self.first: str | None = None  # the key of the first press (then they alternate)
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000})
        try:
            self.tab = self.context.new_page()
            self.tab.set_default_timeout(LIMIT_S * 1000)
            if throttled and cdp:
                session = self.context.new_cdp_session(self.tab)
                session.send("Network.enable")
                session.send("Network.emulateNetworkConditions", CDP_THROTTLE)
            self.wire = Wire()
            watch_wire(self.tab, self.wire)
            path = "" if page == "overview" else page
            self.tab.goto(f"{self.relay.url}/{path}?{urlencode(Settings().to_link() | {'lang': 'en'})}")
            self.tab.wait_for_function(CHARTS_READY, arg=1, polling=100)
            settle(self.tab, self.wire)
            self.result.opening = self.wire.bytes
            self.tab.evaluate(WATCHER)
        except Exception:
            self.context.close()
            raise

    def press(self, timed: bool = True) -> None:
        tab, wire = self.tab, self.wire
        if self.page in KEY_PRESS:
            tab.locator("h1").first.click()  # the page, not a widget, has the focus: the lesson's keys listen there
            first = "ArrowRight"
        else:
            label, _ = PRESS[self.page]
            thumb = tab.locator(f'input[type="range"][aria-label="{label}"]').first
            thumb.focus()
            if self.first is None:  # at the end of its range (the lab's context starts at its largest): back first
                self.first = "ArrowLeft" if thumb.evaluate("e => e.value === e.max") else "ArrowRight"
            first = self.first
        opposite = {"ArrowLeft": "ArrowRight", "ArrowRight": "ArrowLeft"}[first]
        key = first if self.presses % 2 == 0 else opposite
        self.presses += 1
        tab.evaluate(BROWSER_IDLE)
        tab.evaluate("limit => { window.__lat.done = window.__lat.arm(limit); }", LIMIT_S * 1000)
        wire.reset()
        pid = self.server.streamlit.process.pid
        cpu, down = cpu_seconds(pid), self.relay.down
        tab.keyboard.press(key)
        drawn = tab.evaluate("() => window.__lat.done")
        if drawn is None:
            raise TimeoutError(f"{self.page}: no chart showed new data within {LIMIT_S} s of the press")
        settle(tab, wire)
        if tab.locator('[data-testid="stException"]').count():
            raise RuntimeError(f"{self.page}: the page shows an exception")
        if timed:
            self.result.drawn_ms.append(drawn)
            self.result.payload.append(wire.bytes)
            self.result.wire.append(self.relay.down - down)
            self.result.cpu_s.append(cpu_seconds(pid) - cpu)

    def close(self) -> None:
        self.context.close()


# --- report --------------------------------------------------------------------------------------------------------
def med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def kb(values: list[int]) -> str:
    return f"{med(values) / 1e3:,.0f} kB"


def page_lines(page: str, tabs: dict[tuple[str, bool], Tab]) -> list[str]:
    off, off_t = tabs["off", False].result, tabs["off", True].result
    on, on_t = tabs["on", False].result, tabs["on", True].result
    ratio = med(off_t.drawn_ms) / med(off.drawn_ms)
    link_ms = 1000 * (med(off_t.wire) * 8 / THROTTLED.bits_per_s + THROTTLED.latency_s)
    return [
        f"| {page} | {off.opening / 1e3:,.0f} kB | {kb(off.payload)} | {med(off.drawn_ms):,.0f} ms | {med(off_t.drawn_ms):,.0f} ms "
        f"| {ratio:.2f}x {'ok' if ratio <= THROTTLED_BUDGET else 'OVER'} | {link_ms:,.0f} ms "
        f"| {kb(off.wire)} / {kb(on.wire)} ({med(on.wire) / med(off.wire):.2f}x) "
        f"| {1000 * med(off.cpu_s):,.0f} / {1000 * med(on.cpu_s):,.0f} ms "
        f"| {med(on.drawn_ms):,.0f} / {med(on_t.drawn_ms):,.0f} ms ({med(on_t.drawn_ms) / med(on.drawn_ms):.2f}x) |"
    ]


HEADER = [
    "| page | websocket bytes opening the page | per press | press -> chart, loopback | throttled | throttled / loopback (goal <= 2x) "
    "| the link's own time for those bytes (20 Mbit/s + 40 ms) | on the wire: compression off / on "
    "| server CPU per press: off / on | compression on: loopback / throttled |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="CI: heatmaps, 1 press per tab")
    parser.add_argument("--presses", type=int, default=None, help="timed presses per tab (default 6, --quick 1)")
    parser.add_argument("--page", choices=list(PAGES), action="append", default=[], help="only this page (repeatable)")
    parser.add_argument(
        "--cdp",
        action="store_true",
        help="throttle with Chromium's network emulation instead (it leaves websockets be)",
    )
    args = parser.parse_args()
    presses = args.presses or (1 if args.quick else 6)
    # The opened value is computed already: one press sees the other. --quick does each press once (its figures are a
    # check's, never judged: 4 presses and their redraws fewer)
    untimed = 0 if args.quick else 2
    # --quick: one page, the one whose frames are largest (the check is that compression sends fewer bytes)
    pages = args.page or (["heatmaps"] if args.quick else list(PAGES))
    if presses > 50:
        parser.error("bounded: at most 50 presses per tab")

    from playwright.sync_api import sync_playwright

    def interrupted(signum, frame):  # a SIGTERM stops the servers too (the finally below)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupted)
    work = Path(tempfile.mkdtemp(prefix="explorer-wire-bench-"))
    servers: list[Server] = []
    failed = False
    lines: list[str] = []
    try:
        for name in ("off", "on"):
            streamlit = StreamlitServer(work, env={COMPRESSION: "true" if name == "on" else "false"})
            shaped = Relay(streamlit.port, None if args.cdp else THROTTLED)
            servers.append(Server(name, streamlit, Relay(streamlit.port), shaped))
            streamlit.launch()
        for server in servers:
            server.streamlit.wait_until_healthy(LIMIT_S)
            server.streamlit.warm_up(LIMIT_S)
        load = os.getloadavg()
        print(
            f"{time.strftime('%Y-%m-%d %H:%M:%S')}: {presses} timed presses per tab after {untimed} untimed, medians; "
            f"chromium headless on {os.cpu_count()} cores, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; "
            f"throttled: {THROTTLED.bits_per_s / 1e6:.0f} Mbit/s down and up, {1000 * THROTTLED.latency_s:.0f} ms "
            f"round trip ({'Chromium: Network.emulateNetworkConditions' if args.cdp else 'emulated in the relay'})",
            flush=True,
        )
        print("\n".join(HEADER), flush=True)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            try:
                for page in pages:
                    tabs: dict[tuple[str, bool], Tab] = {}
                    try:
                        for server in servers:
                            for throttled in (False, True):
                                tabs[server.name, throttled] = Tab(browser, server, page, throttled, args.cdp)
                        for tab in tabs.values():
                            for _ in range(untimed):  # the servers' caches: both values seen once
                                tab.press(timed=False)
                        for _ in range(presses):
                            for tab in tabs.values():
                                tab.press()
                        lines += page_lines(page, tabs)
                        print(lines[-1], flush=True)
                        off, on = med(tabs["off", False].result.wire), med(tabs["on", False].result.wire)
                        if not 0 < on <= off:  # permessage-deflate must send fewer bytes than plain frames
                            failed = True
                            print(f"| {page} | FAILED: {on:,.0f} B a press compressed, {off:,.0f} B plain |")
                    except Exception as error:
                        failed = True
                        print(f"| {page} | FAILED: {type(error).__name__}: {str(error).splitlines()[0][:300]} |")
                    finally:
                        for tab in tabs.values():
                            tab.close()
                    for server in servers:
                        if not server.streamlit.alive():
                            raise RuntimeError(f"a server died: {server.streamlit.log_text()[-2000:]}")
            finally:
                browser.close()
        load = os.getloadavg()
        print(f"load average at the end: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    except (Exception, KeyboardInterrupt) as error:
        failed = True
        print(f"!! {type(error).__name__}: {error}")
    finally:
        for server in servers:
            server.relay.close()
            server.throttled.close()
            server.streamlit.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
