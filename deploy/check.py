"""The hosted copy, built and answered (make deploy-check): deploy/Dockerfile built, one container drawing pages in
Debian's chromium, then deploy/compose.yaml's classroom (two replicas behind HAProxy) drawing one, the replica that
holds the session killed, and the session back on the other with the same view.

    python deploy/check.py [--docker docker] [--base python:3.11-slim] [--torch-wheels DIR] [--ca-certs FILE]
                           [--haproxy-base IMAGE] [--compose "docker-compose"]

Needs a Docker daemon with BuildKit (the CA bundle is a build secret), docker compose (or docker-compose), and
Playwright with Debian's chromium. Prints each step's seconds; exit status 0 when every check passed.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import io
import json
import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from deploy.serve import COOKIE  # noqa: E402
from deploy.served import CHARTS_READY, CHROMIUM, CHROMIUM_ARGS, SCRIPT_IDLE, free_port  # noqa: E402

IMAGE = "attention-explorer"
HAPROXY_IMAGE = "attention-explorer-haproxy"
PROJECT = "attention-explorer-check"  # compose's project name: its containers, network and volume
PORT = 8501  # the image's (its CMD)
START_SECONDS = 300  # a container's health, then a page's first run (torch imported) on a loaded machine
# A page that draws charts from the trained model: the model's file converted at build time, read in the container.
PAGES = ("", "trained")
# HAProxy from the base's Debian packages, for compose's balancer where the official haproxy image cannot be pulled.
HAPROXY_DOCKERFILE = """FROM {base}
RUN apt-get update && apt-get install -y --no-install-recommends haproxy && rm -rf /var/lib/apt/lists/*
USER haproxy
"""


def step(name: str, started: float) -> None:
    print(f"{name}: {time.monotonic() - started:.0f} s", flush=True)


def run(*words: str, env: dict | None = None, stdin: bytes | None = None) -> str:
    print("+", shlex.join(words), flush=True)
    done = subprocess.run(words, input=stdin, capture_output=True, env=None if env is None else os.environ | env)
    if done.returncode:
        raise SystemExit(
            f"{words[0]} failed ({done.returncode}):\n{done.stdout.decode()[-3000:]}{done.stderr.decode()[-3000:]}"
        )
    return done.stdout.decode()


@contextlib.contextmanager
def served_wheels(folder: Path | None) -> Iterator[str]:
    """pip options that find torch's wheels in folder, served over loopback for the build (which runs on the host's
    network), or "" to leave the Dockerfile's own (PyTorch's CPU index)."""
    if folder is None:
        yield ""
        return
    with tempfile.TemporaryDirectory() as shown:
        for wheel in folder.glob("torch-*.whl"):
            (Path(shown) / wheel.name).symlink_to(wheel)
        handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=shown)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield f"--find-links http://127.0.0.1:{server.server_port}/"
        finally:
            server.shutdown()


def build(args: argparse.Namespace) -> None:
    env = {"DOCKER_BUILDKIT": "1"}
    with served_wheels(args.torch_wheels) as torch_from:
        options = ["--build-arg", f"BASE={args.base}"]
        if args.ca_certs:
            options += ["--secret", f"id=ca_certs,src={args.ca_certs}"]
        if torch_from:
            options += ["--build-arg", f"TORCH_FROM={torch_from}", "--network", "host"]
        run(args.docker, "build", "-f", "deploy/Dockerfile", "-t", IMAGE, *options, str(REPO), env=env)
    if args.haproxy_base:
        dockerfile = HAPROXY_DOCKERFILE.format(base=args.haproxy_base).encode()
        run(args.docker, "build", "-t", HAPROXY_IMAGE, "-", env=env, stdin=dockerfile)


def pem_bodies(path: Path) -> set[str]:
    """Each certificate's base64 body in a PEM bundle, joined onto one line."""
    found = re.findall(r"-----BEGIN CERTIFICATE-----(.*?)-----END CERTIFICATE-----", path.read_text(), re.DOTALL)
    return {"".join(body.split()) for body in found}


def private_certificates(bundle: Path) -> set[str]:
    """The bundle's certificates that no public store holds (a proxy's own): the public ones are certifi's roots and
    those of Debian's ca-certificates (which keeps some roots certifi has dropped), where this machine has them."""
    import certifi

    public = pem_bodies(Path(certifi.where()))
    for path in Path("/usr/share/ca-certificates").rglob("*.crt"):
        public |= pem_bodies(path)
    return pem_bodies(bundle) - public


def image_files_holding(docker: str, needles: set[str]) -> list[str]:
    """Files in any layer of the image whose text holds one of the needles (a certificate's first 64 characters)."""
    heads = {needle[:64].encode() for needle in needles}
    saved = subprocess.Popen([docker, "save", IMAGE], stdout=subprocess.PIPE)
    holding = []
    with tarfile.open(fileobj=saved.stdout, mode="r|") as image:
        for member in image:
            if not member.name.endswith(".tar"):
                continue
            with tarfile.open(fileobj=io.BytesIO(image.extractfile(member).read())) as layer:
                for entry in layer:
                    if entry.isfile() and entry.size < 50_000_000:
                        text = layer.extractfile(entry).read()
                        if any(head in text for head in heads):
                            holding.append(entry.name)
    saved.wait()
    return holding


def wait_healthy(url: str, timeout: float = START_SECONDS) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), urllib.request.urlopen(f"{url}/_stcore/health", timeout=3) as answer:
            if answer.read().strip() == b"ok":
                return
        time.sleep(1)
    raise SystemExit(f"{url}/_stcore/health did not answer ok within {timeout:.0f} s")


def draw(tab, url: str) -> int:
    """Open url as a visitor and wait until its charts hold data and no script runs; the number of charts."""
    tab.goto(url)
    tab.wait_for_function(CHARTS_READY, arg=1, timeout=START_SECONDS * 1000)
    tab.wait_for_function(SCRIPT_IDLE, timeout=START_SECONDS * 1000)
    # Exceptions only: a page's warnings may be meant (the share box warns of a localhost link); the trained page
    # draws no chart without its model.
    errors = tab.locator('[data-testid="stException"]').all_inner_texts()
    if errors:
        raise SystemExit(f"{url} showed {errors}")
    return tab.evaluate("document.querySelectorAll('.js-plotly-plot').length")


def check_container(docker: str, browser) -> None:
    port = free_port()
    name = f"{PROJECT}-single"
    run(docker, "run", "-d", "--rm", "--name", name, "-p", f"127.0.0.1:{port}:{PORT}", IMAGE)
    try:
        started = time.monotonic()
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url)
        step("container healthy", started)
        tab = browser.new_page()
        for page in PAGES:
            print(f"/{page}: {draw(tab, f'{url}/{page}')} charts drawn", flush=True)
            step(f"container /{page} drawn", started)
        tab.context.close()
    finally:
        subprocess.run([docker, "logs", "--tail", "20", name], check=False)
        subprocess.run([docker, "rm", "-f", name], check=False, capture_output=True)


def replica_services() -> dict[str, str]:
    """The affinity cookie's value (serve.py names the servers r1, r2, ... in order) -> compose's service."""
    import yaml

    command = shlex.split(
        yaml.safe_load((REPO / "deploy" / "compose.yaml").read_text())["services"]["config"]["command"]
    )
    servers = command[command.index("--servers") + 1].split(",")
    return {f"r{index + 1}": address.split(":")[0] for index, address in enumerate(servers)}


def check_classroom(compose: list[str], browser, haproxy_image: str | None) -> None:
    port = free_port()
    env = {"EXPLORER_COOKIE_SECRET": secrets.token_hex(32), "EXPLORER_PORT": str(port)}
    if haproxy_image:
        env["HAPROXY_IMAGE"] = haproxy_image
    base = [*compose, "-p", PROJECT, "-f", str(REPO / "deploy" / "compose.yaml")]
    run(*base, "up", "-d", "--no-build", env=env)
    try:
        started = time.monotonic()
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url)
        step("classroom healthy", started)
        tab = browser.new_page()
        link = f"{url}/mapping?lang=zh&d_model=1024&heads=16"
        charts = draw(tab, link)
        replica = next(c["value"] for c in tab.context.cookies() if c["name"] == COOKIE)
        before = tab.url
        step(f"classroom drew {charts} charts on {replica}", started)
        killed = time.monotonic()
        run(*base, "kill", "-s", "SIGKILL", replica_services()[replica], env=env)
        deadline = time.monotonic() + START_SECONDS
        while next((c["value"] for c in tab.context.cookies() if c["name"] == COOKIE), replica) == replica:
            if time.monotonic() > deadline:
                raise SystemExit("the session never moved to the other replica")
            tab.wait_for_timeout(200)
        tab.wait_for_function(CHARTS_READY, arg=charts, timeout=START_SECONDS * 1000)
        tab.wait_for_function(SCRIPT_IDLE, timeout=START_SECONDS * 1000)
        if tab.url != before:
            raise SystemExit(f"the view came back as {tab.url}, not {before}")
        survivor = next(c["value"] for c in tab.context.cookies() if c["name"] == COOKIE)
        step(f"{replica} killed, the same view back on {survivor}", killed)
        tab.context.close()
    finally:
        subprocess.run([*base, "logs", "--tail", "20"], check=False, env=os.environ | env)
        subprocess.run([*base, "down", "-v"], check=False, env=os.environ | env, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docker", default="docker")
    parser.add_argument("--compose", help="the compose command (default: docker compose, else docker-compose)")
    parser.add_argument("--base", default="python:3.11-slim", help="the Dockerfile's BASE")
    parser.add_argument("--torch-wheels", type=Path, help="a folder with torch's CPU wheel, for the build")
    parser.add_argument("--ca-certs", type=Path, help="the CA bundle the build's HTTPS trusts (a build secret)")
    parser.add_argument("--haproxy-base", help="a Debian image to build compose's HAProxy on (else haproxy:2.6)")
    parser.add_argument("--no-build", action="store_true", help="check the images built before, as they are")
    args = parser.parse_args()
    if args.compose:
        compose = shlex.split(args.compose)
    elif subprocess.run([args.docker, "compose", "version"], capture_output=True).returncode == 0:
        compose = [args.docker, "compose"]
    else:
        compose = [shutil.which("docker-compose") or "docker-compose"]

    from playwright.sync_api import sync_playwright

    started = time.monotonic()
    if not args.no_build:
        build(args)
        step("image built", started)
    if args.ca_certs:
        private = private_certificates(args.ca_certs)
        held = image_files_holding(args.docker, private)
        if held:
            raise SystemExit(f"the image holds the build's private certificate in {held}")
        step(f"no layer holds any of the {len(private)} private certificates", started)
    size = json.loads(run(args.docker, "image", "inspect", IMAGE))[0]["Size"]
    print(f"image size: {size / 1e9:.2f} GB", flush=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        check_container(args.docker, browser)
        check_classroom(compose, browser, HAPROXY_IMAGE if args.haproxy_base else None)
        browser.close()
    step("every check passed", started)


if __name__ == "__main__":
    main()
