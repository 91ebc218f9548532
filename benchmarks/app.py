"""The app's own budgets (ARCHITECTURE.md, Budgets), measured: rerun time, bytes sent to the browser, server memory.

    python benchmarks/app.py            # every page at default and largest settings, then a classroom of 20 sessions
    python benchmarks/app.py --quick    # CI's short mode: default settings, 1 change per page, 4 sessions (warmed
                                        # by the server's own run of app.py, not a browser's visit)
    python benchmarks/app.py --profile heatmaps   # only this: where one page's rerun time goes at the largest settings
    python benchmarks/app.py --classroom-only --largest-class   # 20 students, all at the largest widths (memory)
    python benchmarks/app.py --classroom-only --model-class     # 20 students, all on the trained model, each own text

Part 1 runs each page in this process through Streamlit's AppTest (the server-side work of a rerun, no network).
Part 2 starts `streamlit run app.py` on a free 127.0.0.1 port and opens one headless chromium context per student,
each with its own link, each moving a slider; it checks that every session ends showing its own settings.
Exit status: 0 unless a page raised, a session never showed its page, the server died, or a session showed another
session's settings. Timings over budget are reported, never fatal (the machine may be shared).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from streamlit.testing.v1 import AppTest  # noqa: E402
from streamlit.util import calc_hash  # noqa: E402

from deploy.served import CHARTS_READY, CHROMIUM, CHROMIUM_ARGS, SCRIPT_IDLE, StreamlitServer  # noqa: E402
from explorer.pages import PAGES  # noqa: E402
from explorer.sent import chart_payload, charts, payload_bytes  # noqa: E402
from explorer.settings import SEQ_LEN_CHOICES, Settings  # noqa: E402
from explorer.state import SLIDER_LABELS  # noqa: E402

# ARCHITECTURE.md, Budgets
BUDGET_RERUN_DEFAULT_MS = 150  # median
BUDGET_RERUN_LARGEST_MS = 600  # median
BUDGET_CHART_BYTES = 1_000_000  # per page, at any setting
BUDGET_SERVER_RSS = 1.5e9  # with 20 sessions open

LARGEST = Settings(
    d_model=8192, heads=128, groups=128, latent=4096, rope_dim=64, seq_len=8192, batch=128, dtype="float32"
)
# Each change goes to settings this process has not seen, so every rerun recomputes (no cache hit flatters it).
# A change: (widget kind, widget key, value), as AppTest finds the widget.
DEFAULT_CHANGES = [("select_slider", "setting_seq_len", n) for n in (96, 128, 192, 48, 32, 256, 24, 16)]
LARGEST_CHANGES = [("select_slider", "setting_groups", g) for g in (64, 32, 16, 8, 4, 2)]
# Page controls that need new layers too, at the largest settings: the next page of heads, another length or head.
VIEW_CHANGES = {
    "heatmaps": [("selectbox", "view_hm_from", h) for h in (16, 32, 48, 64, 80, 96)]
    + [("selectbox", "view_hm_head", h) for h in (101, 96)],  # heads of the last page shown (96-111)
    "masks": [("slider", "view_mk_long", n) for n in (13, 14, 15)]
    + [("selectbox", "view_mk_head", h) for h in (5, 6, 7)],
}
# Pages that read no sidebar setting draw none: their own first control is moved instead (the sidebar's regimes
# would find nothing to move there).
OWN_CHANGES = {
    "trained": [("slider", "view_tm_layer", n) for n in (4, 5, 6, 7, 8, 9, 10, 11)],
    "lab": [("select_slider", "view_lab_context", n) for n in (4096, 2048, 1024, 512, 1024, 2048, 4096, 8192)],
    "lesson": [("selectbox", "view_step", n) for n in (2, 3, 4, 5, 7, 8, 9, 10)],  # the next step, as a class goes
}
TICKS = os.sysconf("SC_CLK_TCK")
CPU: dict = {}  # the classroom's CPU accounting: server pid, server and browser seconds


def megabytes(n: float) -> str:
    return f"{n / 1e6:,.2f} MB"


def rss_of(pid: int | str = "self") -> tuple[int, int]:
    """(current, peak) resident set size in bytes, from /proc (psutil is not required)."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) * 1024
    return fields.get("VmRSS", 0), fields.get("VmHWM", 0)


def verdict(value: float, budget: float) -> str:
    return "ok" if value <= budget else "OVER"


# --- part 1: server-side rerun time and payload, through AppTest -----------------------------------------------------
def open_page(name: str, settings: Settings, timeout: float) -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=timeout)
    for key, value in settings.to_link().items():
        at.query_params[key] = value
    at._page_hash = calc_hash(name)  # st.Page(url_path=name): the page a link to /<name> opens
    return at.run()


def errors_of(at: AppTest) -> list[str]:
    return [e.value for e in at.exception] + [e.value for e in at.error]


def measure_page(name: str, start: Settings, changes: list[tuple[str, str, object]], timeout: float) -> dict:
    """Open the page at `start`, then move one widget per change; time each rerun."""
    began = time.perf_counter()
    at = open_page(name, start, timeout)
    open_ms = (time.perf_counter() - began) * 1000
    problems = errors_of(at)
    chart_bytes, element_bytes = payload_bytes(at)
    times = []
    for kind, key, value in changes:
        began = time.perf_counter()
        getattr(at, kind)(key=key).set_value(value).run()
        times.append((time.perf_counter() - began) * 1000)
        problems += errors_of(at)
        charts, elements = payload_bytes(at)
        chart_bytes, element_bytes = max(chart_bytes, charts), max(element_bytes, elements)
    return {
        "open_ms": open_ms,
        "times": times,
        "chart_bytes": chart_bytes,
        "element_bytes": element_bytes,
        "rss": rss_of()[0],
        "problems": problems,
    }


def run_part_one(quick: bool, timeout: float, pages: list[str]) -> bool:
    quick_changes = 1  # --quick: each page reran once after a change (a check; the medians are the full run's)
    regimes = [("default", Settings(), DEFAULT_CHANGES[:quick_changes] if quick else DEFAULT_CHANGES)]
    if not quick:
        regimes.append(("largest", LARGEST, LARGEST_CHANGES))
    print("== Part 1: server-side rerun after a slider change (AppTest, this process) ==")
    print(
        f"budgets: rerun median <= {BUDGET_RERUN_DEFAULT_MS} ms at default, <= {BUDGET_RERUN_LARGEST_MS} ms at the "
        f"largest settings; chart data <= {megabytes(BUDGET_CHART_BYTES)} per page"
    )
    print(
        "largest = d_model 8192, 128 heads, groups 128 then 64..2, latent 4096, rope 64, 8192 tokens, batch 128, float32"
    )
    print("each change goes to settings not seen before in this process, so no rerun is served from st.cache_data")
    print(
        "'view' rows: the same largest settings, then page controls that need new layers: "
        + "; ".join(
            f"{page}: {', '.join(sorted({key for _, key, _ in changes}))}" for page, changes in VIEW_CHANGES.items()
        )
    )
    if quick:
        print("--quick: default settings only, 1 change per page (the largest settings are measured by the full run)")
    header = (
        f"{'page':<10} {'settings':<8} {'first open':>11} {'rerun median':>13} {'max':>9} {'n':>3}  {'budget':>8}  "
        f"{'chart JSON':>11} {'all elements':>13}  {'RSS after':>10}"
    )
    print(header)
    print("-" * len(header))
    ok = True
    for name in pages:
        page_regimes = regimes + ([("view", LARGEST, VIEW_CHANGES[name])] if not quick and name in VIEW_CHANGES else [])
        if name in OWN_CHANGES:
            page_regimes = [("default", Settings(), OWN_CHANGES[name][:quick_changes] if quick else OWN_CHANGES[name])]
        for regime, start, changes in page_regimes:
            result = measure_page(name, start, changes, timeout)
            budget = BUDGET_RERUN_DEFAULT_MS if regime == "default" else BUDGET_RERUN_LARGEST_MS
            median, worst = statistics.median(result["times"]), max(result["times"])
            print(
                f"{name:<10} {regime:<8} {result['open_ms']:>8,.0f} ms {median:>10,.0f} ms {worst:>6,.0f} ms "
                f"{len(result['times']):>3}  {budget:>5} {verdict(median, budget):<4} "
                f"{megabytes(result['chart_bytes']):>11} {megabytes(result['element_bytes']):>10} "
                f"{verdict(result['element_bytes'], BUDGET_CHART_BYTES):<4} {megabytes(result['rss']):>9}"
            )
            for problem in result["problems"]:
                ok = False
                print(f"   !! {name} raised: {problem[:300]}")
    return ok


def profile_page(name: str, timeout: float) -> None:
    """Where the rerun time of one page goes at the largest settings (cumulative time, top functions): three sidebar
    changes, then three of the page's own controls that need new layers (VIEW_CHANGES), if it has any."""
    from streamlit.runtime.scriptrunner import script_runner

    at = open_page(name, LARGEST, timeout)
    profiler = cProfile.Profile()
    run_script = script_runner.exec_func_with_error_handling

    def profiled(func, ctx):  # AppTest runs the script in a thread of its own: profile inside that thread
        def body():
            profiler.enable()
            try:
                return func()
            finally:
                profiler.disable()

        return run_script(body, ctx)

    script_runner.exec_func_with_error_handling = profiled
    try:
        for kind, key, value in OWN_CHANGES.get(name, LARGEST_CHANGES[:3] + VIEW_CHANGES.get(name, [])[:3])[:6]:
            getattr(at, kind)(key=key).set_value(value).run()
    finally:
        script_runner.exec_func_with_error_handling = run_script
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).sort_stats("cumulative")
    stats.print_stats(r"(attn_core|explorer|pages/|plotly|json|numpy|torch|streamlit/elements)", 30)
    print(f"== Profile: {name}, reruns at the largest settings (cumulative seconds) ==")
    print(out.getvalue())
    shown = charts(at)
    sizes = sorted(((len(chart.proto.bytes), i) for i, chart in enumerate(shown)), reverse=True)
    for size, index in sizes:
        spec = chart_payload(shown[index])["figure"]
        traces = ", ".join(f"{t.get('type', 'scatter')}:{len(json.dumps(t)):,} B" for t in spec.get("data", []))[:300]
        print(f"chart {index}: {size:,} B JSON; frames {len(json.dumps(spec.get('frames', []))):,} B; traces {traces}")


# --- part 2: the classroom ------------------------------------------------------------------------------------------
def cpu_seconds(pid: int) -> float:
    """User + system CPU time a live process has used, from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def descendants(root: int) -> set[int]:
    """Live processes below root (the browser's processes below this one, say)."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def browser_cpu_seconds(server_pid: int) -> float:
    """CPU time of every process this benchmark started except the server: chromium and Playwright's driver."""
    total = 0.0
    for pid in descendants(os.getpid()) - {server_pid}:
        try:
            total += cpu_seconds(pid)
        except OSError:
            continue
    return total


class RssSampler(threading.Thread):
    """Samples the server's resident memory while the classroom runs; the kernel's VmHWM gives the true peak."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak_sampled, self.stopping = pid, 0, threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                self.peak_sampled = max(self.peak_sampled, rss_of(self.pid)[0])
            except OSError:
                return
            self.stopping.wait(0.25)

    def peak(self) -> int:
        try:
            return max(self.peak_sampled, rss_of(self.pid)[1])
        except OSError:
            return self.peak_sampled


CLASS_KINDS = ("mixed", "largest", "model")


def student_link(index: int, kind: str = "mixed") -> tuple[str, Settings, int, dict[str, str]]:
    """Session index's own page, settings (its seed is unique, so a leak cannot go unnoticed) and page parameters.
    kind "largest": every student at the largest widths (d_model 8192, 128 heads, latent 4096), the worst case for
    memory; "model": every student on the trained model's page with a text of their own (a forward pass each)."""
    names = list(PAGES)
    page = "trained" if kind == "model" else names[index % len(names)]
    view = {"tm_text": f"Student {index} asks how attention shares its keys and values."} if kind == "model" else {}
    if kind == "largest":
        settings = replace(
            LARGEST, groups=(8, 16, 32, 64)[index % 4], seq_len=(1024, 1536, 2048, 3072)[index % 4], seed=1000 + index
        )
        return page, settings, SEQ_LEN_CHOICES.index(settings.seq_len), view
    d_model, heads = [(256, 4), (512, 8), (768, 12), (1024, 16), (384, 6)][index % 5]
    settings = Settings(
        d_model=d_model,
        heads=heads,
        groups=2,
        latent=128,
        rope_dim=16,
        seq_len=(16, 24, 32, 48)[index % 4],
        batch=1 + index % 2,
        seed=1000 + index,
    )
    return page, settings, SEQ_LEN_CHOICES.index(settings.seq_len), view


CHART_MARKER = b"displayModeBar"  # in the config of every chart explorer.charts.show_chart sends


async def one_student(browser, base: str, index: int, moves: int, limit: float, kind: str) -> dict:
    page_name, settings, seq_index, view = student_link(index, kind)
    path = "" if page_name == "overview" else page_name
    url = f"{base}/{path}?{urlencode(settings.to_link() | view)}"
    result = {"index": index, "page": page_name, "first_chart": None, "phases": None, "moves": [], "problem": None}
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        tab = await context.new_page()
        tab.set_default_timeout(limit * 1000)
        opened: list[float] = []  # when the page's websocket to the server opened
        received: list[float] = []  # when the first websocket message carrying a chart arrived

        def watch(socket) -> None:
            if not opened:
                opened.append(time.perf_counter() - began)

            def frame(payload) -> None:
                data = payload if isinstance(payload, bytes) else payload.encode()
                if not received and CHART_MARKER in data:
                    received.append(time.perf_counter() - began)

            socket.on("framereceived", frame)

        tab.on("websocket", watch)
        began = time.perf_counter()
        await tab.goto(url)
        await tab.wait_for_function(CHARTS_READY, arg=1, polling=100)
        result["first_chart"] = time.perf_counter() - began
        if opened and received:
            result["phases"] = (opened[0], received[0] - opened[0], result["first_chart"] - received[0])
        await tab.wait_for_function(SCRIPT_IDLE, polling=100)
        thumb = tab.locator(f'[data-testid="stSidebar"] input[type="range"][aria-label="{SLIDER_LABELS["seq_len"]}"]')
        # A page that shows no sequence-length slider (the trained model, the lab, the lesson) is only opened: its
        # session still holds memory and is read back for its own settings.
        moves = moves if "seq_len" in PAGES[page_name].uses else 0
        for step in range(1, moves + 1):
            target = SEQ_LEN_CHOICES[seq_index + step]
            began = time.perf_counter()
            await thumb.focus()
            await tab.keyboard.press("ArrowRight")
            await tab.wait_for_function(
                f"() => new URLSearchParams(location.search).get('seq_len') === '{target}'", polling=50
            )
            await tab.wait_for_function(SCRIPT_IDLE, polling=50)
            result["moves"].append(time.perf_counter() - began)
        result["expected"] = replace(settings, seq_len=SEQ_LEN_CHOICES[seq_index + moves])
        result["tab"] = tab  # stays open: the sessions are read back once all of them are done
    except Exception as error:  # reported per session; the others go on
        result["problem"] = f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"
    result["context"] = context
    return result


async def read_back(result: dict) -> None:
    """What a session shows now: its URL, sidebar sliders, seed box, and any exception box."""
    tab = result["tab"]
    try:
        await tab.wait_for_function(SCRIPT_IDLE, polling=100)
        result["url"] = dict(parse_qsl(urlsplit(tab.url).query, keep_blank_values=True))
        result["sidebar"] = dict(
            await tab.locator('[data-testid="stSidebar"] input[type="range"]').evaluate_all(
                "els => els.map(e => [e.getAttribute('aria-label'), e.getAttribute('aria-valuetext')])"
            )
        )
        seed_box = tab.locator('[data-testid="stSidebar"] [data-testid="stNumberInput"] input')
        result["seed_box"] = await seed_box.input_value() if await seed_box.count() else None
        result["exceptions"] = await tab.locator('[data-testid="stException"]').count()
    except Exception as error:
        result["problem"] = f"reading back: {type(error).__name__}: {str(error).splitlines()[0][:200]}"


def leaks(result: dict) -> list[str]:
    """Where a finished session shows anything but its own settings."""
    expected: Settings = result["expected"]
    found = []
    for name, value in expected.to_link().items():
        if result["url"].get(name) != value:
            found.append(f"URL {name}={result['url'].get(name)!r}, expected {value!r}")
    sidebar, uses = result["sidebar"], PAGES[result["page"]].uses  # a page shows the sliders of what it reads
    for name in ("d_model", "heads", "seq_len", "batch"):
        label, value = SLIDER_LABELS[name], getattr(expected, name)
        if name in uses and sidebar.get(label) != str(value):
            found.append(f"sidebar {label}={sidebar.get(label)!r}, expected {value}")
    if "seed" in uses and result["seed_box"] != str(expected.seed):
        found.append(f"seed box {result['seed_box']!r}, expected {expected.seed}")
    return found


async def warm_up(browser, base: str, limit: float) -> float:
    """The teacher opens the app before class: the server's first visit pays the imports (torch, plotly)."""
    context = await browser.new_context()
    try:
        tab = await context.new_page()
        tab.set_default_timeout(limit * 1000)
        began = time.perf_counter()
        await tab.goto(base)
        await tab.wait_for_function(CHARTS_READY, arg=1, polling=100)
        return time.perf_counter() - began
    finally:
        await context.close()


async def classroom(
    base: str, sessions: int, moves: int, limit: float, kind: str, server_warm_up: Callable[[float], bool] | None = None
) -> list[dict]:
    """server_warm_up (--quick): the server's own run of app.py pays the imports instead of the teacher's visit (one
    chromium page fewer: its drawing is most of a page's work)."""
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            if server_warm_up is None:
                cold = await warm_up(browser, base, limit)
                print(
                    f"cold start: the server's first visit showed its chart after {cold:.1f} s (imports); the class "
                    "arrives after that"
                )
            else:
                began = time.perf_counter()
                ran = await asyncio.to_thread(server_warm_up, limit)
                print(
                    f"cold start: the server's own run of app.py {'took' if ran else 'FAILED after'} "
                    f"{time.perf_counter() - began:.1f} s (imports; no browser); the class arrives after that"
                )

            async def staggered(index: int) -> dict:
                await asyncio.sleep(0.25 * index)  # students arrive over a few seconds, not in one instant
                return await one_student(browser, base, index, moves, limit, kind)

            results = await asyncio.gather(*(staggered(i) for i in range(sessions)))
            # Every session is still open: only now read each one back, after all the others have moved too.
            await asyncio.gather(*(read_back(r) for r in results if not r["problem"]))
            CPU["browser"] = browser_cpu_seconds(CPU["server_pid"])
            CPU["rss_all_open"] = rss_of(CPU["server_pid"])[0]
            for result in results:
                await result.pop("context").close()
                result.pop("tab", None)
            return results
        finally:
            await browser.close()


def run_part_two(
    sessions: int, moves: int, limit: float, total_limit: float, kind: str = "mixed", quick: bool = False
) -> bool:
    print()
    print(
        f"== Part 2: a classroom: {sessions} sessions, one chromium context each, each moving a slider {moves} times"
        + {
            "mixed": "",
            "largest": ", every one at the largest widths (d_model 8192, 128 heads, latent 4096)",
            "model": ", every one on the trained model's page with a text of their own",
        }[kind]
        + " =="
    )
    server = StreamlitServer(Path(tempfile.mkdtemp(prefix="explorer-bench-")))
    server.start()
    process = server.process
    sampler = RssSampler(process.pid)
    idle_rss = rss_of(process.pid)[0]
    sampler.start()
    CPU.update(server_pid=process.pid, server_start=cpu_seconds(process.pid), browser=None, rss_all_open=None)
    load_before = os.getloadavg()[0]
    began = time.perf_counter()
    try:
        warm = server.warm_up if quick else None
        results = asyncio.run(asyncio.wait_for(classroom(server.url, sessions, moves, limit, kind, warm), total_limit))
        died = process.poll() is not None
    except TimeoutError:
        print(f"!! the classroom did not finish within {total_limit:.0f} s")
        results, died = [], process.poll() is not None
    finally:
        wall = time.perf_counter() - began
        sampler.stopping.set()
        peak = sampler.peak()
        server_cpu = cpu_seconds(process.pid) - CPU["server_start"] if process.poll() is None else None
        load_after = os.getloadavg()[0]
        server.stop()

    ok = bool(results) and not died
    for result in results:
        moves_text = ", ".join(f"{m * 1000:,.0f}" for m in result["moves"])
        status = "ok"
        if result["problem"]:
            status, ok = f"FAILED: {result['problem']}", False
        else:
            found = leaks(result)
            if result["exceptions"]:
                status, ok = f"FAILED: the page shows {result['exceptions']} exception(s)", False
            elif found:
                status, ok = "LEAK: " + "; ".join(found), False
        first = f"{result['first_chart']:.1f} s" if result["first_chart"] is not None else "-"
        print(
            f"session {result['index']:>2} {result['page']:<9} first chart {first:>7}  moves (ms): {moves_text:<22} {status}"
        )
    firsts = [r["first_chart"] for r in results if r["first_chart"] is not None]
    phases = [r["phases"] for r in results if r.get("phases")]
    all_moves = [m for r in results for m in r["moves"]]
    if firsts:
        print(
            f"time to first chart: median {statistics.median(firsts):.1f} s, max {max(firsts):.1f} s "
            f"(browser and server share this machine's cores)"
        )
    if phases:
        loading, serving, drawing = (statistics.median(p[i] for p in phases) for i in range(3))
        print(
            f"  split (medians): {loading:.1f} s the browser loading the app until its websocket opens, {serving:.1f} s "
            f"the server's run until the first chart's data arrives, {drawing:.1f} s the browser drawing it (plotly.js)"
        )
    if all_moves:
        print(
            f"slider move -> URL updated and rerun finished: median {statistics.median(all_moves) * 1000:,.0f} ms, "
            f"max {max(all_moves) * 1000:,.0f} ms"
        )
    if server_cpu is not None and CPU.get("browser") is not None:
        print(
            f"where the time went: server {server_cpu:,.0f} CPU s, chromium + driver {CPU['browser']:,.0f} CPU s, "
            f"in {wall:,.0f} s of wall time on {os.cpu_count()} cores (load average {load_before:.1f} before, "
            f"{load_after:.1f} after; other work on the machine counts in it)"
        )
    print(
        f"server RSS: {megabytes(idle_rss)} before the first session, {megabytes(CPU.get('rss_all_open') or 0)} with all "
        f"{sessions} sessions open at the end, peak {megabytes(peak)} "
        f"(budget {megabytes(BUDGET_SERVER_RSS)} with 20 sessions: {verdict(peak, BUDGET_SERVER_RSS)})"
    )
    leaked = [r for r in results if not r["problem"] and leaks(r)]
    checked = [r for r in results if not r["problem"]]
    print(
        f"every session ends showing its own settings: {'yes' if checked and len(checked) == sessions and not leaked else 'NO'} "
        f"({len(checked) - len(leaked)}/{sessions} read back with all sessions still open: URL, sidebar sliders, "
        f"seed box); wall {wall:.0f} s"
    )
    if died:
        print(f"!! the server died; its log ends:\n{server.log_text()[-2000:]}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI's short mode")
    parser.add_argument("--sessions", type=int, default=None, help="classroom size (default 20, --quick 4)")
    parser.add_argument(
        "--profile",
        choices=list(PAGES),
        action="append",
        default=[],
        help="only profile this page's reruns at the largest settings (repeatable)",
    )
    parser.add_argument(
        "--page",
        choices=list(PAGES),
        action="append",
        default=[],
        help="only measure this page in part 1 (repeatable; default every page)",
    )
    parser.add_argument("--skip-classroom", action="store_true")
    parser.add_argument("--classroom-only", action="store_true")
    parser.add_argument(
        "--largest-class",
        action="store_true",
        help="the classroom at the largest widths: the worst case for the server's memory",
    )
    parser.add_argument(
        "--model-class",
        action="store_true",
        help="the classroom all on the trained model's page, each student with a text of their own",
    )
    args = parser.parse_args()
    sessions = max(1, min(args.sessions or (4 if args.quick else 20), 40))
    timeout = 300.0  # seconds for one AppTest run: a bound, not a budget

    if args.profile:  # a diagnosis, not the benchmark: only the profiles
        for name in args.profile:
            profile_page(name, timeout)
        return 0
    ok = True if args.classroom_only else run_part_one(args.quick, timeout, args.page or list(PAGES))
    if not args.skip_classroom:
        ok = (
            run_part_two(
                sessions,
                moves=1 if args.quick else 3,
                limit=400.0 if args.largest_class or args.model_class else 180.0,
                total_limit=900.0 if args.largest_class or args.model_class else 240.0 if args.quick else 600.0,
                kind="largest" if args.largest_class else "model" if args.model_class else "mixed",
                quick=args.quick,
            )
            and ok
        )
    print()
    print("result:", "ok" if ok else "FAILED (a crash or a leak between sessions: see above)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
