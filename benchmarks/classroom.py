"""A classroom of simulated students against replicas behind HAProxy (deploy/serve.py), with Locust.

    python benchmarks/classroom.py                     # 50, 100, 300 students on the overview; 1 replica, then 2
    python benchmarks/classroom.py --pages all         # the same, students spread over every page (per-page table)
    python benchmarks/classroom.py --users 20 --replicas 2 --seconds 30
    python benchmarks/classroom.py --capacity --pages all   # the most students with p95 <= 1 s, 1 and 2 replicas
    python benchmarks/classroom.py --quick             # CI: 3 students, 2 replicas, a few seconds; fails on an error
    python benchmarks/classroom.py --quick --pages all # CI: one student on every page
    python benchmarks/classroom.py --quick --capacity  # CI: two small levels on 1 and on 2 replicas
    python benchmarks/classroom.py --quick --checks    # CI: those three in one lecture hall (2 replicas, then 1)
    (--quick: a press every 4 s; a window ends once every student's press finished in it, after 4 s, within 60 s)

Each student speaks Streamlit's own websocket protocol (the protobuf classes in streamlit.proto), as the browser's
frontend does: it loads the page's link over HTTP (which gives it the balancer's affinity cookie), opens
/_stcore/stream, and sends a BackMsg rerun_script carrying the link's query string; the replica answers with
ForwardMsgs (new_session, deltas, page_info_changed with the link the app writes, script_finished). Then, about every
10 s, it moves one widget its page reads (PRESSES: the sidebar's sequence length on the overview, the mapping and the
heatmaps, the batch on kv_cache, d_model on masks; the lesson's step, the trained model's layer and the lab's context
length, pages without sidebar sliders) one option along: a rerun_script with the widget states the page holds (every
slider, select slider and selectbox at its value, the moved one at its new value) and the query string the app last
wrote. Latency is from that send to the script_finished message. An error is a run that does not finish
successfully within the time-out, an exception element, a link whose parameter for the moved widget did not change,
or a websocket that closes.

Printed for each number of students and replicas: presses finished per second in the measured window (offered:
students / 10 s), p50 / p95 / max latency of those presses, errors, and per replica its CPU (percent of one core over
the measured window), RSS, PSS and USS (/proc/PID/smaps_rollup: PSS shares pages among the processes that map them,
USS is a process's own), beside HAProxy's and Locust's CPU; with several pages, the same per page. Every run starts its
replicas fresh (each warmed on every page of the mix first); everything listens on 127.0.0.1 and stops at the end.

--capacity keeps one classroom per replica count and adds students level by level (--start, x --grow) until a
level's window misses p95 <= --budget (or has an error), then halves the
gap, at most --steps levels; it prints the largest level that fit per replica count, students per core, and 2 replicas'
presses/s against 1's at that budget. The machine's load average is printed at the start and the end: on a shared
machine the figures are those of a loaded machine.
"""

from __future__ import annotations

# Locust patches the standard library for gevent when it is imported: first, before sockets and threads exist.
from locust import User, constant_pacing, task  # isort: skip
from locust.env import Environment  # isort: skip

import argparse
import contextlib
import os
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
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
# --quick: a check of the tool, not a class's pace: a shorter period, and each window ends once every student's press
# finished in it (what --quick asserts) and it lasted a period, within QUICK_WINDOW_MOST seconds
QUICK_PRESS_EVERY = 4.0
QUICK_WINDOW_MOST = 60.0
RUN_TIMEOUT = 120.0  # a run not finished by then is an error


@dataclass(frozen=True)
class Press:
    """What a student moves on a page: a widget the page reads (by its English label) and the link parameter it
    writes (the press is an error unless the link the app writes back changes)."""

    label: str
    param: str


# Each page's press changes what that page computes or draws. The sidebar's sequence length where the page reads it;
# kv_cache reads the batch, masks the layer (d_model); the lesson, the trained model and the lab show no sidebar
# sliders: their own step selectbox, layer slider (explorer.trained.LAYER) and context select slider (explorer.lab).
PRESSES = {
    "overview": Press(SLIDER_LABELS["seq_len"], "seq_len"),
    "mapping": Press(SLIDER_LABELS["seq_len"], "seq_len"),
    "kv_cache": Press(SLIDER_LABELS["batch"], "batch"),
    "heatmaps": Press(SLIDER_LABELS["seq_len"], "seq_len"),
    "trained": Press("Layer", "tm_layer"),
    "masks": Press(SLIDER_LABELS["d_model"], "d_model"),
    "lesson": Press("Step", "step"),
    "lab": Press("Context length for the whole-model cache (tokens)", "lab_context"),
}
# --pages all: students spread over every page, a larger share (2 in 10 each) on the trained model and the lab
MIX = ("overview", "trained", "lab", "mapping", "kv_cache", "trained", "lab", "heatmaps", "masks", "lesson")


def path_of(page: str) -> str:
    return "" if page == "overview" else page


@dataclass
class Record:
    """Everything the students measured, for one run of the benchmark."""

    presses: list[tuple[float, float, str]] = field(default_factory=list)  # (sent at, latency s, page) when finished
    opens: list[float] = field(default_factory=list)  # latency of a page's first run
    errors: list[tuple[float, str, str]] = field(default_factory=list)  # (when, page, what happened)
    opening: int = 0  # students loading their page right now
    opened: int = 0
    students: Counter = field(default_factory=Counter)  # page -> students who arrived on it

    def clear(self) -> None:
        self.presses.clear()
        self.opens.clear()
        self.errors.clear()
        self.opened = self.opening = 0
        self.students.clear()


RECORD = Record()


class StreamlitError(Exception):
    pass


@dataclass
class Widget:
    """A widget as the frontend holds it: its id, its options as the frontend shows them, the one it is at."""

    id: str
    label: str
    kind: str  # "select_slider" (value: its option's label), "slider" (an int slider), "selectbox" (option's label)
    options: list[str]
    current: str

    @classmethod
    def of(cls, proto, known: dict[str, Widget]) -> Widget:
        """From a Slider or Selectbox element; a value not set by the run stays what the student last chose."""
        last = known.get(proto.label)
        if proto.DESCRIPTOR.name == "Selectbox":
            kind, options = "selectbox", list(proto.options)
            current = proto.raw_value if proto.set_value and proto.HasField("raw_value") else None
            default = options[proto.default] if proto.HasField("default") else options[0]
        elif proto.type == proto.SELECT_SLIDER:
            kind, options = "select_slider", list(proto.options)
            current = proto.raw_value[0] if proto.set_value and proto.raw_value else None
            default = options[int(proto.default[0])]
        else:
            kind = "slider"
            options = [str(v) for v in range(int(proto.min), int(proto.max) + 1, int(proto.step or 1))]
            current = str(int(proto.value[0])) if proto.set_value and proto.value else None
            default = str(int(proto.default[0]))
        if current not in options:
            current = last.current if last is not None and last.current in options else default
        return cls(proto.id, proto.label, kind, options, current)

    def state(self, option: str) -> WidgetState:
        state = WidgetState(id=self.id)
        if self.kind == "select_slider":
            state.string_array_value.data.append(option)
        elif self.kind == "slider":
            state.double_array_value.data.append(float(option))
        else:
            state.string_value = option
        return state


class Tab:
    """One browser tab's conversation with a Streamlit server, as its frontend holds it."""

    def __init__(self, base_url: str, path: str, query: str) -> None:
        self.base_url, self.path, self.query = base_url, path, query
        self.http = requests.Session()
        self.socket: websocket.WebSocket | None = None
        self.page_script_hash = ""
        self.widgets: dict[str, Widget] = {}  # label -> a slider, select slider or selectbox the page drew

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
        """Move a widget `step` options along (back, at an end); wait for the run; the new option and the latency.
        The rerun carries every tracked widget's state, the moved one at its new value, as the frontend sends them."""
        widget = self.widgets[label]
        index = widget.options.index(widget.current) + step
        if not 0 <= index < len(widget.options):
            index = widget.options.index(widget.current) - step
        value = widget.options[index]
        states = [w.state(w.current) for w in self.widgets.values() if w.id != widget.id]
        states.append(widget.state(value))
        widget.current = value  # what the frontend now shows, whether or not the run re-sends the widget
        started = time.perf_counter()
        self.rerun(page_name="", widgets=states)
        self.until_finished()
        return value, time.perf_counter() - started

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
                if which in ("slider", "selectbox"):
                    widget = Widget.of(getattr(element, which), self.widgets)
                    self.widgets[widget.label] = widget
            elif kind == "script_finished":
                status = msg.script_finished
                if status == ForwardMsg.FINISHED_SUCCESSFULLY:
                    return
                if status == ForwardMsg.FINISHED_WITH_COMPILE_ERROR:
                    raise StreamlitError("the script did not compile")
                # FINISHED_EARLY_FOR_RERUN: the app reran itself (st.rerun); its next run follows

    def link(self) -> dict[str, str]:
        return dict(parse_qsl(self.query, keep_blank_values=True))

    def close(self) -> None:
        if self.socket is not None:
            self.socket.close()
        self.http.close()


class Student(User):
    """Opens the class's link (the next page of the mix), then moves that page's widget about every PRESS_EVERY s."""

    wait_time = constant_pacing(PRESS_EVERY)
    host_query = ""  # set by run(): the link's query string, without the page
    pages: tuple[str, ...] = ("overview",)  # set by run(): the mix, one entry per student in turn
    arrived = 0

    def on_start(self) -> None:
        self.page = Student.pages[Student.arrived % len(Student.pages)]
        Student.arrived += 1
        self.press_on = PRESSES[self.page]
        self.tab = Tab(self.host, path_of(self.page), Student.host_query)
        self.step = random.choice((1, -1))
        RECORD.students[self.page] += 1
        RECORD.opening += 1
        try:
            latency = self.tab.open()
        except Exception as error:
            self._fail("open", error)
            self.tab = None
            return
        finally:
            RECORD.opening -= 1
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
        param = self.press_on.param
        before = self.tab.link().get(param)
        try:
            value, latency = self.tab.press(self.press_on.label, self.step)
            after = self.tab.link().get(param)
            if after == before or after is None:
                raise StreamlitError(f"the link says {param}={after} after the press to {value} (before: {before})")
        except Exception as error:
            self._fail("press", error)
            self.tab.close()
            self.tab = None  # a lost session
            return
        options = self.tab.widgets[self.press_on.label].options
        if options.index(value) in (0, len(options) - 1):
            self.step = -self.step  # back along the slider at its ends
        RECORD.presses.append((sent, latency, self.page))
        self.environment.events.request.fire(
            request_type="WS", name="press", response_time=latency * 1000, response_length=0, exception=None
        )

    def _fail(self, what: str, error: Exception) -> None:
        RECORD.errors.append((time.time(), self.page, f"{self.page} {what}: {type(error).__name__}: {error}"))
        self.environment.events.request.fire(
            request_type="WS", name=what, response_time=0, response_length=0, exception=error
        )

    def on_stop(self) -> None:
        if self.tab is not None:
            self.tab.close()
            self.tab = None


# --- measured windows -------------------------------------------------------------------------------------------
def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


@dataclass
class Result:
    """One measured window: a number of students on a number of replicas."""

    replicas: int
    users: int
    seconds: float
    opened: int
    presses: list[float]  # latencies of the presses finished in the window
    errors: list[str]  # since these students' count was set (opening included)
    cpu: dict[str, float]  # process -> percent of one core over the window
    memory: dict[str, tuple[float, float, float]]  # replica -> RSS, PSS, USS in MiB
    by_page: dict[str, list[float]] = field(default_factory=dict)  # page -> latencies in the window
    students: dict[str, int] = field(default_factory=dict)  # page -> students on it
    errors_by_page: dict[str, int] = field(default_factory=dict)

    def percentile(self, q: float) -> float:
        return percentile(self.presses, q)

    @property
    def rate(self) -> float:
        return len(self.presses) / self.seconds

    @property
    def offered(self) -> float:
        return self.users / PRESS_EVERY


class Lecture:
    """A classroom (replicas behind HAProxy) with Locust's students in it: their number set between measured windows."""

    def __init__(self, classroom: Classroom, pages: tuple[str, ...], settings: Settings, spawn_rate: float) -> None:
        self.classroom, self.spawn_rate = classroom, spawn_rate
        RECORD.clear()
        Student.pages, Student.arrived = pages, 0
        Student.host_query = urlencode(settings.to_link() | {"lang": "en"})
        self.environment = Environment(user_classes=[Student], host=classroom.url)
        self.runner = self.environment.create_local_runner()
        self.users = 0
        self.since = time.time()

    def students(self, users: int) -> None:
        """Add students (or send some home) until `users` are in; returns once every new one has opened the page."""
        self.since = time.time()
        errors = len(RECORD.errors)
        self.runner.start(users, spawn_rate=self.spawn_rate)
        deadline = time.monotonic() + abs(users - self.users) / self.spawn_rate + RUN_TIMEOUT
        while time.monotonic() < deadline:
            gevent.sleep(0.2)
            if self.runner.user_count == users and RECORD.opening == 0:
                break
            if len(RECORD.errors) - errors > users:
                break
        self.users = users

    def window(self, seconds: float, *, until_served: bool = False) -> Result:
        """Measure `seconds` of the class as it is: presses finished in the window, CPU and memory. until_served: at
        most `seconds`, ended once it has lasted a press period and at least one press per student finished in it and
        one on every page (a shorter window would count the presses sent as the students arrived: a rate too high)."""
        replicas = self.classroom.pids()  # the replicas alive: one_replica_left() stops the others
        processes = {name: psutil.Process(pid) for name, pid in replicas.items()}
        processes["haproxy"] = psutil.Process(self.classroom.haproxy.pid)
        processes["locust"] = psutil.Process()
        before = {name: sum(p.cpu_times()[:2]) for name, p in processes.items()}
        start = time.time()
        if until_served:
            while time.time() - start < seconds and (time.time() - start < PRESS_EVERY or not self.served(start)):
                gevent.sleep(0.2)
        else:
            gevent.sleep(seconds)
        end = time.time()
        cpu = {name: 100 * (sum(p.cpu_times()[:2]) - before[name]) / (end - start) for name, p in processes.items()}
        memory = {name: (m.rss / 2**20, m.pss / 2**20, m.uss / 2**20) for name, m in self.classroom.memory().items()}
        # presses finished in the window (throughput), with their latencies (from the press, maybe before it)
        finished = [(latency, page) for sent, latency, page in RECORD.presses if start <= sent + latency <= end]
        errors = [(page, text) for when, page, text in RECORD.errors if when >= self.since]
        by_page: dict[str, list[float]] = {page: [] for page in dict.fromkeys(Student.pages)}
        for latency, page in finished:
            by_page[page].append(latency)
        return Result(
            replicas=len(replicas),
            users=self.users,
            seconds=end - start,
            opened=RECORD.opened,
            presses=[latency for latency, _ in finished],
            errors=[text for _, text in errors],
            cpu=cpu,
            memory=memory,
            by_page=by_page,
            students={page: RECORD.students[page] for page in by_page},
            errors_by_page=dict(Counter(page for page, _ in errors)),
        )

    def served(self, start: float) -> bool:
        """At least as many presses finished since `start` as there are students, and one on every page of the mix."""
        finished = [page for sent, latency, page in RECORD.presses if sent + latency >= start]
        return len(finished) >= self.users and set(Student.pages) <= set(finished)

    def quit(self) -> None:
        self.runner.quit()


def pace(seconds: float) -> None:
    """Every student presses once per `seconds` (the offered load, the capacity's settling and its report follow)."""
    global PRESS_EVERY
    PRESS_EVERY = seconds
    Student.wait_time = constant_pacing(seconds)


@contextlib.contextmanager
def lecture_hall(replicas: int, pages: tuple[str, ...]) -> Iterator[Classroom]:
    """A started classroom of `replicas`, each replica warmed on every page of the mix; stops it all at the end."""
    log_dir = Path(tempfile.mkdtemp(prefix="explorer-classroom-"))
    classroom = Classroom(replicas, log_dir=log_dir)
    try:
        classroom.start()
        warm(classroom, pages, Settings())
        yield classroom
    finally:
        classroom.stop()
        shutil.rmtree(log_dir, ignore_errors=True)


def run(
    replicas: int, users: int, seconds: float, spawn_rate: float, pages: tuple[str, ...], *, quick: bool = False
) -> Result:
    """A fresh classroom, `users` students who all open their page, then one measured window (quick: ended once
    every student's press finished in it)."""
    with lecture_hall(replicas, pages) as classroom:
        return run_in(classroom, users, seconds, spawn_rate, pages, quick=quick)


def run_in(
    classroom: Classroom, users: int, seconds: float, spawn_rate: float, pages: tuple[str, ...], *, quick: bool = False
) -> Result:
    """`users` students in a started classroom who all open their page, then one measured window; they leave."""
    lecture = Lecture(classroom, pages, Settings(), spawn_rate)
    try:
        lecture.students(users)
        return lecture.window(seconds, until_served=quick)
    finally:
        lecture.quit()


def warm(classroom: Classroom, pages: tuple[str, ...], settings: Settings) -> None:
    """One student per replica opens each page of the mix first, so every replica has imported torch (and loaded the
    trained model, built the lab's table) before the class arrives (what a teacher opening the links beforehand
    does); not measured."""
    query = urlencode(settings.to_link() | {"lang": "en"})
    for page in dict.fromkeys(pages):
        tabs = []
        try:
            for _ in classroom.replicas:
                tab = Tab(classroom.url, path_of(page), query)
                tab.open()  # leastconn: each open tab holds a connection, so the next goes to another replica
                tabs.append(tab)
        finally:
            for tab in tabs:
                tab.close()


# --- capacity: the most students at one press per PRESS_EVERY s with p95 <= the budget --------------------------
P95_BUDGET = 1.0  # seconds: issue 26's capacity is students at one press per 10 s with p95 <= 1 s


def fits(result: Result, budget: float) -> bool:
    """No error, and p95 within the budget (a level whose presses queue for seconds misses it; one where none
    finished has no p95 and misses it too)."""
    return not result.errors and result.percentile(0.95) <= budget


def capacity(replicas: int, pages: tuple[str, ...], **search) -> list[Result]:
    """capacity_in() a fresh classroom of `replicas`, warmed on the mix's pages."""
    with lecture_hall(replicas, pages) as classroom:
        return capacity_in(classroom, pages, **search)


def capacity_in(
    classroom: Classroom,
    pages: tuple[str, ...],
    *,
    start: int,
    grow: float,
    most: int,
    steps: int,
    seconds: float,
    spawn_rate: float,
    budget: float,
    quick: bool = False,
) -> list[Result]:
    """In a started classroom, students added level by level (x grow) until a level misses the budget, then
    halved between the last level that fit and the first that did not; at most `steps` measured levels. Before each
    window the class settles for one press period (new students' openings and a backlog left by a level that missed
    are not measured)."""
    levels: list[Result] = []
    lecture = Lecture(classroom, pages, Settings(), spawn_rate)
    try:
        good, bad, users = 0, None, start
        for _ in range(steps):
            lecture.students(users)
            gevent.sleep(PRESS_EVERY)  # settle: presses spread over the period, any backlog drained or not
            result = lecture.window(seconds, until_served=quick)
            levels.append(result)
            print(level_line(result, budget), flush=True)
            if fits(result, budget):
                good = max(good, users)
            else:
                bad = users if bad is None else min(bad, users)
            if bad is None:
                users = min(most, max(users + 1, round(users * grow)))
                if users == levels[-1].users:
                    break  # at the most asked for, and it fits
            else:
                if bad - good <= max(2, 0.1 * bad):
                    break
                users = (good + bad) // 2 if good else max(1, bad // 2)
    finally:
        lecture.quit()
    return levels


def level_line(r: Result, budget: float) -> str:
    return (
        f"  {r.users:4} students, {r.replicas} replica(s): {r.rate:6.2f} presses/s (offered {r.offered:.1f}), "
        f"p50 {1000 * r.percentile(0.5):,.0f} ms, p95 {1000 * r.percentile(0.95):,.0f} ms, "
        f"max {1000 * max(r.presses, default=float('nan')):,.0f} ms, errors {len(r.errors)}, "
        f"CPU {', '.join(f'{r.cpu[n]:.0f} %' for n in r.memory)} -> {'fits' if fits(r, budget) else 'over'}"
    )


def capacity_report(found: dict[int, list[Result]], budget: float) -> str:
    """The largest level that fit per replica count, students per core, and 2-vs-1 presses/s at that p95 budget."""
    best = {
        replicas: max((r for r in levels if fits(r, budget)), key=lambda r: r.users, default=None)
        for replicas, levels in found.items()
    }
    cores = os.cpu_count() or 1
    lines = [
        f"capacity: the most students pressing once per {PRESS_EVERY:.0f} s with p95 <= {1000 * budget:.0f} ms and no "
        f"error ({cores} cores, load average "
        f"{os.getloadavg()[0]:.1f})"
    ]
    for replicas, r in best.items():
        used = min(replicas, cores)
        lines.append(
            f"  {replicas} replica(s): "
            + (
                f"{r.users} students ({r.users / used:.0f} per core), {r.rate:.2f} presses/s at p95 "
                f"{1000 * r.percentile(0.95):,.0f} ms, {10 * sum(r.cpu[n] for n in r.memory) / r.rate:,.0f} ms of "
                f"replica CPU a press ({sum(r.cpu[n] for n in r.memory) / 100:.2f} cores busy); first level over: "
                f"{min((x.users for x in found[replicas] if not fits(x, budget)), default='none reached')}"
                if r is not None
                else "no level fit"
            )
        )
    one, two = best.get(1), best.get(2)
    if one is not None and two is not None:
        lines.append(
            f"  2 replicas vs 1: {two.rate / one.rate:.2f}x the presses/s at p95 <= {1000 * budget:.0f} ms "
            f"(issue 26: >= 1.7x)"
        )
    return "\n".join(lines)


# --- report -------------------------------------------------------------------------------------------------------
def report(results: list[Result]) -> str:
    lines = [
        "| students | replicas | presses/s (offered) | p50 | p95 | max | errors | CPU per replica | RSS / PSS / USS per replica (MiB) | haproxy CPU | locust CPU |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        replicas = [name for name in r.memory]
        lines.append(
            f"| {r.users} | {r.replicas} | {r.rate:.2f} ({r.offered:.1f}) "
            f"| {1000 * r.percentile(0.5):.0f} ms | {1000 * r.percentile(0.95):.0f} ms "
            f"| {1000 * max(r.presses, default=float('nan')):.0f} ms | {len(r.errors)} "
            f"| {', '.join(f'{r.cpu[n]:.0f} %' for n in replicas)} "
            f"| {', '.join('{:.0f} / {:.0f} / {:.0f}'.format(*r.memory[n]) for n in replicas)} "
            f"| {r.cpu['haproxy']:.0f} % | {r.cpu['locust']:.0f} % |"
        )
    return "\n".join(lines)


def pages_report(results: list[Result]) -> str:
    """Per page, each run side by side: students, presses finished, p50 / p95 / max, errors."""
    lines = [
        "| page | what is pressed | "
        + " | ".join(f"{r.users} st., {r.replicas} rep.: students, presses, p50 / p95 / max, errors" for r in results)
        + " |",
        "| --- | --- | " + " | ".join("---" for _ in results) + " |",
    ]
    for page in dict.fromkeys(p for r in results for p in r.by_page):
        cells = []
        for r in results:
            latencies = r.by_page.get(page, [])
            cells.append(
                f"{r.students.get(page, 0)}, {len(latencies)}, {1000 * percentile(latencies, 0.5):,.0f} / "
                f"{1000 * percentile(latencies, 0.95):,.0f} / {1000 * max(latencies, default=float('nan')):,.0f} ms, "
                f"{r.errors_by_page.get(page, 0)}"
            )
        lines.append(f"| {page} | {PRESSES[page].param} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", default="50,100,300", help="numbers of students, comma-separated")
    parser.add_argument("--replicas", default="1,2", help="numbers of replicas, comma-separated")
    parser.add_argument("--seconds", type=float, default=60, help="measured window per run, after all have opened")
    parser.add_argument("--spawn-rate", type=float, default=5, help="students arriving per second")
    parser.add_argument(
        "--pages",
        default="overview",
        help="the pages students open: overview (default), all (the mix: 2 in 10 students each on the trained model "
        "and the lab, 1 in 10 on every other page), or page keys, comma-separated",
    )
    parser.add_argument(
        "--capacity",
        action="store_true",
        help="find the most students with p95 <= --budget for each --replicas (levels from --start, x --grow)",
    )
    parser.add_argument("--start", type=int, default=40, help="--capacity: the first level's students")
    parser.add_argument("--grow", type=float, default=1.5, help="--capacity: each next level x this, until one misses")
    parser.add_argument("--most", type=int, default=600, help="--capacity: never more students than this")
    parser.add_argument("--steps", type=int, default=6, help="--capacity: measured levels per replica count")
    parser.add_argument("--budget", type=float, default=P95_BUDGET, help="--capacity: p95 budget in seconds")
    parser.add_argument("--quick", action="store_true", help="a few students, a few seconds: a check, not a figure")
    parser.add_argument(
        "--checks",
        action="store_true",
        help="with --quick: its three checks (students, --pages all, --capacity) in one lecture hall",
    )
    args = parser.parse_args()
    if args.pages == "all":
        pages = MIX
    else:
        pages = tuple(args.pages.split(","))
        if unknown := [p for p in pages if p not in PRESSES]:
            parser.error(f"unknown page(s) {unknown}: choose from {list(PRESSES)}")
    if args.quick:
        pace(QUICK_PRESS_EVERY)
        args.seconds = QUICK_WINDOW_MOST  # a bound: each window ends once every student's press finished in it
        if args.checks:
            return quick_checks(args.budget)
        if args.capacity:
            args.replicas = "1,2"
            vars(args).update(QUICK_CAPACITY)
        else:
            pages = tuple(dict.fromkeys(pages))  # every page once
            users = max(QUICK_STUDENTS, len(pages))
            args.users, args.replicas, args.spawn_rate = str(users), "2", 3
    users = [int(n) for n in args.users.split(",")]
    replicas = [int(n) for n in args.replicas.split(",")]
    if max(users) > 1000 or args.most > 1000 or args.seconds > 1800 or args.steps > 12:
        parser.error("bounded: at most 1000 students, 1800 s a window, 12 capacity levels")
    print(
        f"{time.strftime('%Y-%m-%d %H:%M:%S')} on {os.cpu_count()} cores, load average "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}; pages: {', '.join(pages)}",
        flush=True,
    )
    if args.capacity:
        found = {}
        for r in replicas:
            print(f"{time.strftime('%H:%M:%S')} capacity, {r} replica(s) ...", flush=True)
            found[r] = capacity(
                r, pages, start=args.start, grow=args.grow, most=args.most, steps=args.steps,
                seconds=args.seconds, spawn_rate=args.spawn_rate, budget=args.budget, quick=args.quick,
            )  # fmt: skip
        problem = capacity_printed(found, args.budget)
        if args.quick and problem:
            print(f"FAILED: {problem}")
            return 1
        return 0
    results = []
    for n in users:
        for r in replicas:
            print(f"{time.strftime('%H:%M:%S')} {n} students, {r} replica(s) ...", flush=True)
            result = run(r, n, args.seconds, args.spawn_rate, pages, quick=args.quick)
            results.append(result)
            print(report([result]).splitlines()[-1], flush=True)
            for error in result.errors[:5]:
                print(f"  error: {error}", flush=True)
    problem = students_printed(results, pages)
    if args.quick and problem:
        print(f"FAILED: {problem}")
        return 1
    return 0


def capacity_printed(found: dict[int, list[Result]], budget: float) -> str | None:
    """Print the capacity's levels and report; what fails --quick, if anything: a check of the tool, not of the
    machine (each number of replicas measured, every level served presses, without an error)."""
    print()
    levels = [x for found_levels in found.values() for x in found_levels]
    print(report(levels))
    print()
    print(capacity_report(found, budget))
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    errors = [e for x in levels for e in x.errors]
    for error in errors[:5]:
        print(f"  error: {error}")
    if errors or not all(found.values()) or not all(x.presses for x in levels):
        return f"{len(errors)} errors, or a number of replicas without a level, or a level without presses"
    return None


def students_printed(results: list[Result], pages: tuple[str, ...]) -> str | None:
    """Print the runs' table (and per page); what fails --quick, if anything: a student who did not open the page or
    press at least once in the window, an error, or a page without a student whose press finished."""
    print()
    print(report(results))
    if len(dict.fromkeys(pages)) > 1:
        print()
        print(pages_report(results))
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    problems = [r for r in results if r.errors or r.opened < r.users or len(r.presses) < r.users]
    unpressed = [page for r in results for page in dict.fromkeys(pages) if not r.by_page.get(page)]
    if problems or unpressed:
        return f"{[(r.opened, len(r.presses), r.errors[:3]) for r in problems]}; no press on {unpressed}"
    return None


# --- CI: the three quick checks in one lecture hall ----------------------------------------------------------------
QUICK_STUDENTS = 3  # --quick: students on the overview
QUICK_CAPACITY = {"start": 2, "grow": 2.0, "most": 600, "steps": 2, "spawn_rate": 4.0}  # two small levels


def quick_checks(budget: float) -> int:
    """--quick's three checks in one process (what `--quick`, `--quick --pages all` and `--quick --capacity` each
    check): one lecture hall of 2 replicas, warmed on every page, serves the students on the overview, one student
    on every page and the capacity's 2 replicas, then, one replica stopped, the capacity's 1 replica
    (one_replica_left). Prints each phase's start with the CPU seconds the replicas used so far, and `check NAME: ok`
    or `check NAME: FAILED ...` per check; 0 if all three are ok."""
    every_page = tuple(dict.fromkeys(MIX))
    verdicts: dict[str, str | None] = {}
    found: dict[int, list[Result]] = {}
    search = dict(QUICK_CAPACITY, seconds=QUICK_WINDOW_MOST, budget=budget, quick=True)
    with lecture_hall(2, every_page) as classroom:
        for name, pages, users in (("students", ("overview",), QUICK_STUDENTS), ("pages", every_page, len(every_page))):
            print(f"{phase(classroom)} check {name}: {users} students, 2 replicas ...", flush=True)
            result = run_in(classroom, users, QUICK_WINDOW_MOST, 3, pages, quick=True)
            verdicts[name] = students_printed([result], pages)
            print(f"check {name}: {'ok' if verdicts[name] is None else 'FAILED: ' + verdicts[name]}", flush=True)
        print(f"{phase(classroom)} check capacity, 2 replicas ...", flush=True)
        found[2] = capacity_in(classroom, ("overview",), **search)
        print(f"{phase(classroom)} check capacity, 1 replica ...", flush=True)
        found[1] = capacity_in(one_replica_left(classroom), ("overview",), **search)
        print(f"{phase(classroom)} capacity measured", flush=True)
    verdicts["capacity"] = capacity_printed(dict(sorted(found.items())), budget)
    print(f"check capacity: {'ok' if verdicts['capacity'] is None else 'FAILED: ' + verdicts['capacity']}")
    return 1 if any(verdicts.values()) else 0


def phase(classroom: Classroom) -> str:
    """The time, and the CPU seconds each replica alive has used since it started (where --quick's time goes)."""
    used = {name: sum(psutil.Process(pid).cpu_times()[:2]) for name, pid in classroom.pids().items()}
    return f"{time.strftime('%H:%M:%S')} [replica CPU {', '.join(f'{n} {t:.1f} s' for n, t in used.items())}]"


def one_replica_left(classroom: Classroom) -> Classroom:
    """The hall with every replica but the first stopped, once HAProxy counts only that one up: every student goes
    to it, through the same balancer, as in a hall of 1 (a stopped replica holds no CPU and no memory, and a Result
    counts only the replicas alive). Saves --quick a second hall's cold start."""
    first, *rest = classroom.replicas
    for name in rest:
        classroom.replicas[name].stop()
    deadline = time.monotonic() + RUN_TIMEOUT
    while classroom.servers_up() != {first}:
        if time.monotonic() > deadline:
            raise RuntimeError(f"HAProxy did not count {rest} down: {classroom.haproxy_log()[-2000:]}")
        gevent.sleep(0.2)
    return classroom


if __name__ == "__main__":
    sys.exit(main())
