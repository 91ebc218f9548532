"""One replica's peak memory, as a host with a memory limit sees it: `streamlit run app.py` walked in chromium through
every page, both of the lesson's chapters step by step, and the lab's live heal started from its page and waited out.

    python benchmarks/memory.py            # the whole walk (about 5 minutes here: the heal trains for a minute)
    python benchmarks/memory.py --no-heal  # the pages and the lesson only

The peak is the kernel's high-water mark of the server's resident memory (VmHWM in /proc/PID/status: every page
counted, however briefly held), against the budget (ARCHITECTURE.md: 2.5 GB; Streamlit Community Cloud allows 2.7).
The server's cache folder is a fresh one beside the real one, the converted model linked in and the heal store
empty, so the heal really trains (as tests/browser/test_lab_heal_in_browser.py does). Exit status 0 unless a page
showed no chart, the heal failed, or the peak went over the budget.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from attn_core.pretrained import cache_root, load_pretrained  # noqa: E402
from attn_core.pretrained.checkpoint import CACHE_ENV  # noqa: E402
from deploy.served import CHARTS_READY, CHROMIUM, CHROMIUM_ARGS, SCRIPT_IDLE, StreamlitServer  # noqa: E402
from explorer.lesson.steps import STEP  # noqa: E402
from explorer.pages import PAGES  # noqa: E402

BUDGET = 2.5e9  # bytes (DESIGN.md's budgets): a replica fits a 2.7 GB host with room
VIEW_SECONDS = 360  # a page's first run on a cold, shared server
HEAL_SECONDS = 900  # the press to the healed model scored: converting, recording, 60 s of training, scoring
# The lab's heal progress as its page words it (lang=en): training shows a step, the other phases these.
HEAL_RUNNING = """() => /Training: step \\d+|Waiting for another heal|Converting, and scoring|Recording the original|
Scoring the healed/.test(document.body.innerText)""".replace("\n", "")


def status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (the peak) of a process, in bytes."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in {"VmRSS", "VmHWM"}:
            fields[name] = int(value.split()[0]) * 1024
    return fields


def gb(n: float) -> str:
    return f"{n / 1e9:.2f} GB"


def view(tab, url: str, pid: int, label: str) -> None:
    started = time.monotonic()
    tab.goto(url)
    tab.wait_for_function(CHARTS_READY, arg=1, timeout=VIEW_SECONDS * 1000)
    tab.wait_for_function(SCRIPT_IDLE, timeout=VIEW_SECONDS * 1000)
    now = status(pid)
    print(
        f"  {label:28} {time.monotonic() - started:6.1f} s   RSS {gb(now['VmRSS'])}   peak {gb(now['VmHWM'])}",
        flush=True,
    )


def heal(tab, url: str, pid: int) -> None:
    tab.goto(url)
    tab.wait_for_function(CHARTS_READY, arg=1, timeout=VIEW_SECONDS * 1000)
    started = time.monotonic()
    tab.get_by_role("button", name=re.compile("Heal MQA")).click()
    tab.wait_for_function(HEAL_RUNNING, timeout=VIEW_SECONDS * 1000)
    tab.wait_for_function(f"() => !({HEAL_RUNNING})()", timeout=HEAL_SECONDS * 1000, polling=1000)
    if "stopped before it finished" in tab.inner_text("body"):
        raise SystemExit("the heal failed: " + tab.inner_text("body")[-1500:])
    now = status(pid)
    print(
        f"  {'lab: live heal (MQA, mean)':28} {time.monotonic() - started:6.1f} s   RSS {gb(now['VmRSS'])}   "
        f"peak {gb(now['VmHWM'])}",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-heal", action="store_true", help="leave the lab's live heal out")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    load_pretrained()  # converted into the real cache here, not inside the server's first run
    work = Path(tempfile.mkdtemp(prefix="explorer-memory-"))
    cache = work / "cache"
    cache.mkdir()
    for entry in cache_root().iterdir():
        if entry.name != "healed":
            (cache / entry.name).symlink_to(entry)  # the same files; the heal store starts empty
    server = StreamlitServer(work, env={CACHE_ENV: str(cache)})
    server.start(VIEW_SECONDS)
    pid = server.process.pid
    print(f"one replica (pid {pid}) after start: RSS {gb(status(pid)['VmRSS'])}", flush=True)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            tab = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            for page in PAGES:
                if page != "lesson":
                    view(tab, f"{server.url}/{page}?lang=en", pid, page)
            for step in range(STEP.low, STEP.high + 1):
                view(tab, f"{server.url}/lesson?{STEP.name}={step}&lang=en", pid, f"lesson step {step}")
            if not args.no_heal:
                heal(tab, f"{server.url}/lab?lab_model=mqa-mean&lang=en", pid)
            browser.close()
        peak = status(pid)["VmHWM"]
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    verdict = "within" if peak <= BUDGET else "OVER"
    print(f"peak RSS of one replica: {gb(peak)} ({verdict} the {gb(BUDGET)} budget)", flush=True)
    return 0 if peak <= BUDGET else 1


if __name__ == "__main__":
    sys.exit(main())
