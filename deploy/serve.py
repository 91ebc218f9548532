"""Serve a classroom: N `streamlit run app.py` replicas on private loopback ports behind HAProxy.

    python deploy/serve.py --replicas 4 --port 8501           # what `make serve REPLICAS=4 PORT=8501` runs
    python deploy/serve.py --config-only --servers replica1:8501,replica2:8501 --out haproxy.cfg   # for compose

HAProxy (Debian's `haproxy`) listens on HOST:PORT (127.0.0.1 unless told otherwise), keeps each browser on one
replica by a cookie (its page, websocket and downloads live in that replica's memory), checks /_stcore/health every
second and sends a session whose replica died to another one: the page reconnects there and reruns from its link,
which holds the whole view. The replicas share one secret for Streamlit's signed cookies, so a cookie one replica set
is valid on the others. A replica that dies is started again on its port. Ctrl-C or SIGTERM stops everything.

The trained model's weights are a memory-mapped file, so replicas that load it share one copy in the page cache:
RSS counts those shared pages in every replica, PSS divides them among the replicas and USS is what each holds
alone; all three are printed at start and at stop.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from string import Template

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a script, deploy/ is on the path, not the repository that holds it

from deploy.served import StreamlitServer, die_with_parent, free_port  # noqa: E402

TEMPLATE = Path(__file__).with_name("haproxy.cfg.in")
COOKIE = "explorer_replica"  # the affinity cookie; its value names the replica (r1, r2, ...)
REVIVE_SECONDS = 10  # a replica that keeps dying is started again at most this often
STARTUP_SECONDS = 180  # a replica answers its health check (torch comes with a page's first run)


def haproxy_config(servers: list[tuple[str, str]], *, host: str, port: int, stats_socket: Path | None = None) -> str:
    """HAProxy's configuration for these (name, address:port) replicas, from deploy/haproxy.cfg.in."""
    lines = "\n".join(f"    server {name} {address} cookie {name}" for name, address in servers)
    stats = f"    stats socket {stats_socket} mode 600 level user" if stats_socket else ""
    return Template(TEMPLATE.read_text()).substitute(
        host=host, port=port, cookie=COOKIE, servers=lines, stats_socket=stats
    )


def haproxy_binary() -> str:
    found = shutil.which("haproxy") or ("/usr/sbin/haproxy" if os.path.exists("/usr/sbin/haproxy") else None)
    if found is None:
        raise SystemExit("haproxy is not installed: run `make balancer` (apt-get install haproxy)")
    return found


@dataclass
class Memory:
    rss: int
    pss: int
    uss: int


def memory(pid: int) -> Memory:
    """A process's resident memory from /proc/PID/smaps_rollup: RSS, PSS (shared pages divided among their
    sharers) and USS (private pages only), in bytes."""
    fields = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, value, *_ = line.split()
        fields[name.rstrip(":")] = int(value) * 1024
    return Memory(
        rss=fields["Rss"],
        pss=fields["Pss"],
        uss=fields["Private_Clean"] + fields["Private_Dirty"],
    )


class Classroom:
    """Replicas and their balancer. start() returns once HAProxy listens and every replica answers its health
    check; stop() ends them all (also on an exception inside `with`)."""

    def __init__(self, replicas: int, *, port: int | None = None, host: str = "127.0.0.1", log_dir: Path) -> None:
        if replicas < 1:
            raise ValueError(f"replicas={replicas}: at least one replica is needed")
        self.log_dir = log_dir
        self.host, self.port = host, port or free_port()
        self.url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{self.port}"
        # One secret for every replica: Streamlit signs its cookies (XSRF, login) with it.
        env = {"STREAMLIT_SERVER_COOKIE_SECRET": secrets.token_hex(32)}
        self.replicas = {f"r{i + 1}": StreamlitServer(log_dir, env=env) for i in range(replicas)}
        for replica in self.replicas.values():
            replica.die_with_parent = True  # nothing is left running, even if this process is killed outright
        self.haproxy: subprocess.Popen | None = None
        self.config = log_dir / "haproxy.cfg"
        self.stats_socket = log_dir / "haproxy.sock"
        self.restarts = 0
        self._launched: dict[str, float] = {}  # replica -> when revive() last started it

    # --- lifecycle ------------------------------------------------------------------------------------------------
    def start(self, timeout: float = STARTUP_SECONDS) -> Classroom:
        try:
            for replica in self.replicas.values():
                replica.launch()  # side by side: their start-ups overlap
            self.config.write_text(
                haproxy_config(
                    [(name, f"127.0.0.1:{r.port}") for name, r in self.replicas.items()],
                    host=self.host,
                    port=self.port,
                    stats_socket=self.stats_socket,
                )
            )
            binary = haproxy_binary()
            check = subprocess.run([binary, "-c", "-q", "-f", str(self.config)], capture_output=True, text=True)
            if check.returncode != 0:
                raise RuntimeError(f"haproxy rejected {self.config}: {check.stdout}{check.stderr}")
            with open(self.log_dir / "haproxy.log", "ab") as log:
                self.haproxy = subprocess.Popen(
                    [binary, "-db", "-f", str(self.config)],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                    preexec_fn=die_with_parent,
                )
            for replica in self.replicas.values():
                replica.wait_until_healthy(timeout)
            self._wait_for_balancer(timeout)
            self.warm_up(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_for_balancer(self, timeout: float) -> None:
        """Until HAProxy answers the health check and counts every replica up."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.haproxy.poll() is not None:
                raise RuntimeError(f"haproxy exited with {self.haproxy.returncode}: {self.haproxy_log()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as answer:
                    if answer.read().strip() == b"ok" and self.servers_up() == set(self.replicas):
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"haproxy did not report every replica up within {timeout:.0f} s: {self.haproxy_log()}")

    def warm_up(self, timeout: float = STARTUP_SECONDS) -> None:
        """Every replica runs the app once before the first student arrives (StreamlitServer.warm_up), side by side."""
        warming = [threading.Thread(target=r.warm_up, args=(timeout,), daemon=True) for r in self.replicas.values()]
        for thread in warming:
            thread.start()
        for thread in warming:
            thread.join(timeout)

    def stop(self) -> None:
        if self.haproxy is not None and self.haproxy.poll() is None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(self.haproxy.pid, sig)
                    self.haproxy.wait(timeout=10)
                    break
                except ProcessLookupError:
                    break
                except subprocess.TimeoutExpired:
                    continue
        for replica in self.replicas.values():
            replica.stop()

    def __enter__(self) -> Classroom:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def revive(self) -> list[str]:
        """Start again, on its port, every replica that died; the balancer takes it back once it is healthy.
        Returns the names started."""
        now = time.monotonic()
        dead = [
            name
            for name, replica in self.replicas.items()
            if not replica.alive() and now - self._launched.get(name, 0) > REVIVE_SECONDS
        ]
        for name in dead:
            self.replicas[name].launch()
            self._launched[name] = now
            self.restarts += 1
            threading.Thread(target=self._warm_when_up, args=(self.replicas[name],), daemon=True).start()
        return dead

    @staticmethod
    def _warm_when_up(replica: StreamlitServer) -> None:
        try:
            replica.wait_until_healthy(STARTUP_SECONDS)
        except RuntimeError:  # it died again: the next revive() starts it
            return
        replica.warm_up(STARTUP_SECONDS)

    # --- reading it -----------------------------------------------------------------------------------------------
    def stats(self) -> list[dict[str, str]]:
        """HAProxy's `show stat` rows (one per frontend, server and backend), through its stats socket."""
        import socket

        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(str(self.stats_socket))
            sock.sendall(b"show stat\n")
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
        header, *rows = data.decode().strip().splitlines()
        names = header.lstrip("# ").split(",")
        # HAProxy's CSV, taken as it comes: fields are paired with the header as far as both go
        return [dict(zip(names, row.split(","), strict=False)) for row in rows if row]

    def servers_up(self) -> set[str]:
        try:
            rows = self.stats()
        except OSError:
            return set()
        return {r["svname"] for r in rows if r["svname"] in self.replicas and r["status"].startswith("UP")}

    def pids(self) -> dict[str, int]:
        return {name: r.process.pid for name, r in self.replicas.items() if r.alive()}

    def memory(self) -> dict[str, Memory]:
        return {name: memory(pid) for name, pid in self.pids().items()}

    def haproxy_log(self) -> str:
        path = self.log_dir / "haproxy.log"
        return path.read_text(errors="replace") if path.exists() else ""


def memory_table(classroom: Classroom) -> str:
    mib = 2**20
    rows = [f"  {'replica':8} {'pid':>8} {'RSS MiB':>9} {'PSS MiB':>9} {'USS MiB':>9}"]
    total = Memory(0, 0, 0)
    for name, m in classroom.memory().items():
        rows.append(
            f"  {name:8} {classroom.pids()[name]:>8} {m.rss / mib:>9.0f} {m.pss / mib:>9.0f} {m.uss / mib:>9.0f}"
        )
        total = Memory(total.rss + m.rss, total.pss + m.pss, total.uss + m.uss)
    rows.append(f"  {'all':8} {'':>8} {total.rss / mib:>9.0f} {total.pss / mib:>9.0f} {total.uss / mib:>9.0f}")
    return "\n".join(rows)


class Stop(Exception):
    """Ctrl-C or SIGTERM: raised wherever the main thread is (starting, serving), once."""


def serve(replicas: int, port: int, host: str) -> None:
    def on_signal(signum, _frame) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_IGN)  # a second Ctrl-C does not cut the stopping short
        raise Stop(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log_dir = Path(tempfile.mkdtemp(prefix="explorer-serve-"))
    classroom = Classroom(replicas, port=port, host=host, log_dir=log_dir)
    print(f"starting {replicas} replica(s) and haproxy; logs in {log_dir}", flush=True)
    try:
        classroom.start()
        ports = ", ".join(f"{n} 127.0.0.1:{r.port}" for n, r in classroom.replicas.items())
        print(f"serving on http://{host}:{port} ({ports})", flush=True)
        print("memory per replica (the model's weights, once loaded, are shared pages):", flush=True)
        print(memory_table(classroom), flush=True)
        print("Ctrl-C or SIGTERM stops it all.", flush=True)
        try:
            while True:
                time.sleep(1.0)
                if classroom.haproxy.poll() is not None:
                    raise RuntimeError(f"haproxy exited with {classroom.haproxy.returncode}: {classroom.haproxy_log()}")
                for name in classroom.revive():
                    print(f"{name} had stopped: started again on its port", flush=True)
        except Stop:
            print("stopping; memory per replica now:", flush=True)
            print(memory_table(classroom), flush=True)
    except Stop:
        print("stopping", flush=True)
    finally:
        classroom.stop()
        shutil.rmtree(log_dir, ignore_errors=True)
    print("stopped", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicas", type=int, default=os.cpu_count() or 1, help="default: the number of cores")
    parser.add_argument("--port", type=int, default=8501, help="where the balancer listens (default 8501)")
    parser.add_argument("--host", default="127.0.0.1", help="the balancer's address (default 127.0.0.1)")
    parser.add_argument("--config-only", action="store_true", help="write HAProxy's configuration and exit")
    parser.add_argument("--servers", help="with --config-only: the replicas' host:port, comma-separated")
    parser.add_argument("--out", type=Path, help="with --config-only: the file to write (default: stdout)")
    args = parser.parse_args()
    if args.config_only:
        if not args.servers:
            parser.error("--config-only needs --servers host:port,...")
        servers = [(f"r{i + 1}", address) for i, address in enumerate(args.servers.split(","))]
        text = haproxy_config(servers, host=args.host, port=args.port)
        if args.out:
            args.out.write_text(text)
        else:
            sys.stdout.write(text)
        return
    serve(args.replicas, args.port, args.host)


if __name__ == "__main__":
    main()
