"""A classroom of simulated students against replicas behind HAProxy (deploy/serve.py), with Locust.

    python benchmarks/classroom.py                     # 50, 100, 300 students; 1 replica, then 2; 60 s each
    python benchmarks/classroom.py --users 20 --replicas 2 --seconds 30
    python benchmarks/classroom.py --quick             # CI: 3 students, 2 replicas, a few seconds; fails on an error

Each student speaks Streamlit's own websocket protocol (the protobuf classes in streamlit.proto), as the browser's
frontend does: it loads the page's link over HTTP (which gives it the balancer's affinity cookie), opens
/_stcore/stream, and sends a BackMsg rerun_script carrying the link's query string; the replica answers with
ForwardMsgs (new_session, deltas, page_info_changed with the link the app writes, script_finished). Then, about every
10 s, it moves the sidebar's sequence-length slider one step: a rerun_script with the widget states the page holds
(every sidebar slider at its value, the moved one at its new value; a select_slider's value is its option's label)
and the query string the app last wrote. Latency is from that send to the script_finished message. An error is a run
that does not finish successfully within the time-out, an exception element, a link that does not carry the new
value, or a websocket that closes.

Printed for each number of students and replicas: presses finished per second in the measured window (offered:
students / 10 s), p50 / p95 / max latency of those presses, errors, and per replica its CPU (percent of one core over
the measured window), RSS, PSS and USS (/proc/PID/smaps_rollup: PSS shares pages among the processes that map them,
USS is a process's own), beside HAProxy's and Locust's CPU. Every run starts its replicas fresh; everything listens on 127.0.0.1 and stops at the end.
"""

from __future__ import annotations

# Locust patches the standard library for gevent when it is imported: first, before sockets and threads exist.
from locust import User, constant_pacing, task  # isort: skip
from locust.env import Environment  # isort: skip

import argparse
import random
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

import gevent
import psutil
import requests
import websocket

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from streamlit.proto.BackMsg_pb2 import BackMsg  # noqa: E402
from streamlit.proto.ClientState_pb2 import ContextInfo  # noqa: E402
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402
from streamlit.proto.WidgetStates_pb2 import WidgetState  # noqa: E402

from deploy.serve import Classroom  # noqa: E402
from explorer.settings import Settings  # noqa: E402
from explorer.state import SLIDER_LABELS  # noqa: E402

PRESS_EVERY = 10.0  # seconds between a student's presses
RUN_TIMEOUT = 120.0  # a run not finished by then is an error
MOVED = "seq_len"  # the slider a student moves


@dataclass
class Record:
    """Everything the students measured, for one run of the benchmark."""

    presses: list[tuple[float, float]] = field(default_factory=list)  # (sent at, latency s) of finished presses
    opens: list[float] = field(default_factory=list)  # latency of a page's first run
    errors: list[str] = field(default_factory=list)
    opened: int = 0

    def clear(self) -> None:
        self.presses.clear()
        self.opens.clear()
        self.errors.clear()
        self.opened = 0


RECORD = Record()


class StreamlitError(Exception):
    pass


class Tab:
    """One browser tab's conversation with a Streamlit server, as its frontend holds it."""

    def __init__(self, base_url: str, path: str, query: str) -> None:
        self.base_url, self.path, self.query = base_url, path, query
        self.http = requests.Session()
        self.socket: websocket.WebSocket | None = None
        self.page_script_hash = ""
        self.sliders: dict[str, tuple[str, list[str], str]] = {}  # label -> (widget id, options, current option)

    def open(self) -> float:
        """Load the page (the balancer's cookie comes with it), connect, run the link; the run's latency."""
        page = self.http.get(f"{self.base_url}/{self.path}?{self.query}", timeout=RUN_TIMEOUT)
        page.raise_for_status()
        cookie = "; ".join(f"{c.name}={c.value}" for c in self.http.cookies)
        self.socket = websocket.create_connection(
            self.base_url.replace("http://", "ws://") + "/_stcore/stream",
            subprotocols=["streamlit"],
            cookie=cookie,
            origin=self.base_url,
            timeout=RUN_TIMEOUT,
        )
        started = time.perf_counter()
        self.rerun(page_name=self.path, widgets=[])
        self.until_finished()
        return time.perf_counter() - started

    def press(self, label: str, step: int) -> tuple[str, float]:
        """Move a slider `step` options along; wait for the run; the new value and the latency."""
        widget_id, options, current = self.sliders[label]
        index = options.index(current) + step
        if not 0 <= index < len(options):
            index = options.index(current) - step
        value = options[index]
        states = [self._state(i, v) for i, _, v in self.sliders.values() if i != widget_id]
        states.append(self._state(widget_id, value))
        started = time.perf_counter()
        self.rerun(page_name="", widgets=states)
        self.until_finished()
        return value, time.perf_counter() - started

    @staticmethod
    def _state(widget_id: str, option: str) -> WidgetState:
        state = WidgetState(id=widget_id)
        state.string_array_value.data.append(option)  # a select_slider's value: its option's label
        return state

    def rerun(self, *, page_name: str, widgets: list[WidgetState]) -> None:
        msg = BackMsg()
        msg.rerun_script.query_string = self.query
        msg.rerun_script.page_script_hash = self.page_script_hash
        msg.rerun_script.page_name = page_name
        msg.rerun_script.widget_states.widgets.extend(widgets)
        msg.rerun_script.context_info.CopyFrom(
            ContextInfo(locale="en-US", timezone="UTC", timezone_offset=0, url=f"{self.base_url}/{self.path}")
        )
        self.socket.send_binary(msg.SerializeToString())

    def until_finished(self) -> None:
        """Read ForwardMsgs until the script run finishes; keep what the frontend keeps (the link, the page's hash,
        the sliders' ids and values)."""
        while True:
            data = self.socket.recv()
            if not isinstance(data, bytes):
                raise StreamlitError(f"unexpected frame {data!r:.80}")
            msg = ForwardMsg()
            msg.ParseFromString(data)
            kind = msg.WhichOneof("type")
            if kind == "new_session":
                self.page_script_hash = msg.new_session.page_script_hash
            elif kind == "navigation":
                self.page_script_hash = msg.navigation.page_script_hash
            elif kind == "page_info_changed":
                self.query = msg.page_info_changed.query_string
            elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
                element = msg.delta.new_element
                which = element.WhichOneof("type")
                if which == "exception":
                    raise StreamlitError(f"exception shown: {element.exception.message[:200]}")
                if which == "slider" and element.slider.type == element.slider.SELECT_SLIDER:
                    self._slider(element.slider)
            elif kind == "script_finished":
                status = msg.script_finished
                if status == ForwardMsg.FINISHED_SUCCESSFULLY:
                    return
                if status == ForwardMsg.FINISHED_WITH_COMPILE_ERROR:
                    raise StreamlitError("the script did not compile")
                # FINISHED_EARLY_FOR_RERUN: the app reran itself (st.rerun); its next run follows

    def _slider(self, slider) -> None:
        options = list(slider.options)
        if slider.set_value and slider.raw_value:
            current = slider.raw_value[0]
        else:
            known = self.sliders.get(slider.label)
            current = known[2] if known and known[2] in options else options[int(slider.default[0])]
        self.sliders[slider.label] = (slider.id, options, current)

    def link(self) -> dict[str, str]:
        return dict(parse_qsl(self.query))

    def close(self) -> None:
        if self.socket is not None:
            self.socket.close()
        self.http.close()


class Student(User):
    """Opens the class's link, then moves one sidebar slider about every PRESS_EVERY seconds."""

    wait_time = constant_pacing(PRESS_EVERY)
    path = ""  # set by run(): the page's path and link
    query = ""

    def on_start(self) -> None:
        self.tab = Tab(self.host, self.path, self.query)
        self.label = SLIDER_LABELS[MOVED]
        self.step = random.choice((1, -1))
        try:
            latency = self.tab.open()
        except Exception as error:
            self._fail("open", error)
            self.tab = None
            return
        RECORD.opens.append(latency)
        RECORD.opened += 1
        self.environment.events.request.fire(
            request_type="WS", name="open", response_time=latency * 1000, response_length=0, exception=None
        )

    @task
    def press(self) -> None:
        if self.tab is None:
            return
        sent = time.time()
        try:
            value, latency = self.tab.press(self.label, self.step)
            if self.tab.link().get(MOVED) != value:
                raise StreamlitError(f"the link says {MOVED}={self.tab.link().get(MOVED)}, the slider {value}")
        except Exception as error:
            self._fail("press", error)
            self.tab.close()
            self.tab = None  # a lost session
            return
        _, options, _ = self.tab.sliders[self.label]
        if options.index(value) in (0, len(options) - 1):
            self.step = -self.step  # back along the slider at its ends
        RECORD.presses.append((sent, latency))
        self.environment.events.request.fire(
            request_type="WS", name="press", response_time=latency * 1000, response_length=0, exception=None
        )

    def _fail(self, what: str, error: Exception) -> None:
        RECORD.errors.append(f"{what}: {type(error).__name__}: {error}")
        self.environment.events.request.fire(
            request_type="WS", name=what, response_time=0, response_length=0, exception=error
        )

    def on_stop(self) -> None:
        if self.tab is not None:
            self.tab.close()


# --- one measured run -------------------------------------------------------------------------------------------
@dataclass
class Result:
    replicas: int
    users: int
    seconds: float
    opened: int
    presses: list[float]
    errors: list[str]
    cpu: dict[str, float]  # process -> percent of one core over the window
    memory: dict[str, tuple[float, float, float]]  # replica -> RSS, PSS, USS in MiB

    def percentile(self, q: float) -> float:
        ordered = sorted(self.presses)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def run(replicas: int, users: int, seconds: float, spawn_rate: float, path: str, settings: Settings) -> Result:
    log_dir = Path(tempfile.mkdtemp(prefix="explorer-classroom-"))
    RECORD.clear()
    try:
        with Classroom(replicas, log_dir=log_dir) as classroom:
            warm(classroom, path, settings)
            Student.path, Student.query = path, urlencode(settings.to_link() | {"lang": "en"})
            environment = Environment(user_classes=[Student], host=classroom.url)
            runner = environment.create_local_runner()
            runner.start(users, spawn_rate=spawn_rate)
            deadline = time.monotonic() + users / spawn_rate + RUN_TIMEOUT
            while RECORD.opened + len(RECORD.errors) < users and time.monotonic() < deadline:
                gevent.sleep(0.2)  # every student has opened the page (or failed to)
            processes = {name: psutil.Process(pid) for name, pid in classroom.pids().items()}
            processes["haproxy"] = psutil.Process(classroom.haproxy.pid)
            processes["locust"] = psutil.Process()
            before = {name: sum(p.cpu_times()[:2]) for name, p in processes.items()}
            start = time.time()
            gevent.sleep(seconds)
            end = time.time()
            cpu = {name: 100 * (sum(p.cpu_times()[:2]) - before[name]) / (end - start) for name, p in processes.items()}
            memory = {name: (m.rss / 2**20, m.pss / 2**20, m.uss / 2**20) for name, m in classroom.memory().items()}
            runner.quit()
            # presses finished in the window (throughput), with their latencies (from the press, maybe before it)
            presses = [latency for sent, latency in RECORD.presses if start <= sent + latency <= end]
            errors = RECORD.errors[:]
    finally:
        shutil.rmtree(log_dir, ignore_errors=True)
    return Result(replicas, users, end - start, RECORD.opened, presses, errors, cpu, memory)


def warm(classroom: Classroom, path: str, settings: Settings) -> None:
    """One student per replica opens the page first, so every replica has imported torch before the class arrives
    (what a teacher opening the link beforehand does); not measured."""
    query = urlencode(settings.to_link() | {"lang": "en"})
    tabs = []
    try:
        for _ in classroom.replicas:
            tab = Tab(classroom.url, path, query)
            tab.open()  # leastconn: each open tab holds a connection, so the next goes to another replica
            tabs.append(tab)
    finally:
        for tab in tabs:
            tab.close()


def report(results: list[Result]) -> str:
    lines = [
        "| students | replicas | presses/s (offered) | p50 | p95 | max | errors | CPU per replica | RSS / PSS / USS per replica (MiB) | haproxy CPU | locust CPU |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        replicas = [name for name in r.memory]
        lines.append(
            f"| {r.users} | {r.replicas} | {len(r.presses) / r.seconds:.2f} ({r.users / PRESS_EVERY:.1f}) "
            f"| {1000 * r.percentile(0.5):.0f} ms | {1000 * r.percentile(0.95):.0f} ms "
            f"| {1000 * max(r.presses, default=float('nan')):.0f} ms | {len(r.errors)} "
            f"| {', '.join(f'{r.cpu[n]:.0f} %' for n in replicas)} "
            f"| {', '.join('{:.0f} / {:.0f} / {:.0f}'.format(*r.memory[n]) for n in replicas)} "
            f"| {r.cpu['haproxy']:.0f} % | {r.cpu['locust']:.0f} % |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", default="50,100,300", help="numbers of students, comma-separated")
    parser.add_argument("--replicas", default="1,2", help="numbers of replicas, comma-separated")
    parser.add_argument("--seconds", type=float, default=60, help="measured window per run, after all have opened")
    parser.add_argument("--spawn-rate", type=float, default=5, help="students arriving per second")
    parser.add_argument("--page", default="", help="the page's path in the link (default: the overview)")
    parser.add_argument("--quick", action="store_true", help="3 students, 2 replicas, 25 s: a check, not a figure")
    args = parser.parse_args()
    if args.quick:
        args.users, args.replicas, args.seconds, args.spawn_rate = "3", "2", 25, 3
    users = [int(n) for n in args.users.split(",")]
    replicas = [int(n) for n in args.replicas.split(",")]
    if max(users) > 1000 or args.seconds > 1800:
        parser.error("bounded: at most 1000 students and 1800 s a run")
    settings = Settings()
    results = []
    for n in users:
        for r in replicas:
            print(f"{time.strftime('%H:%M:%S')} {n} students, {r} replica(s) ...", flush=True)
            result = run(r, n, args.seconds, args.spawn_rate, args.page, settings)
            results.append(result)
            print(report([result]).splitlines()[-1], flush=True)
            for error in result.errors[:5]:
                print(f"  error: {error}", flush=True)
    print()
    print(report(results))
    if args.quick:
        # every student opened the page and pressed at least once in the window, without an error
        problems = [r for r in results if r.errors or r.opened < r.users or len(r.presses) < r.users]
        if problems:
            print(f"FAILED: {[(r.opened, len(r.presses), r.errors[:3]) for r in problems]}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
