"""deploy/Dockerfile and deploy/compose.yaml, checked without docker (`make deploy-check` builds and runs them, in
minutes, where a daemon runs): the image installs what `make app` installs, its torch comes from PyTorch's CPU index,
the build's CA bundle is a secret no layer keeps, and compose's command lines are ones deploy/serve.py accepts and
that wire its services to each other and to the image's port."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path, PurePath

import yaml

from attn_core.pretrained.checkpoint import PACKAGE, PACKAGE_VERSION

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "deploy" / "Dockerfile"
COMPOSE = REPO / "deploy" / "compose.yaml"
# PyTorch's index of CPU-only wheels: its torch 2.13.0+cpu satisfies requirements.txt's torch==2.13.0.
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
# pip options that change how it installs, not what: left out when two installs are compared.
QUIET_OPTIONS = {"-q", "--quiet", "--no-cache-dir"}
INDEX_OPTIONS = {"--extra-index-url", "--index-url"}


def instructions(path: Path) -> list[tuple[str, str]]:
    """The Dockerfile's instructions as (KEYWORD, arguments), comments dropped and continued lines joined."""
    joined: list[str] = []
    pending = ""
    for line in path.read_text().splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        joined.append(pending)
        pending = ""
    return [(keyword.upper(), rest.strip()) for keyword, _, rest in (line.strip().partition(" ") for line in joined)]


def pip_install(command: list[str]) -> tuple[list[str], list[str]] | None:
    """For a `pip install` command line: what it installs (its other arguments, in order) and the indexes it is
    pointed at; None for any other command."""
    if "pip" not in command or command[command.index("pip") + 1 : command.index("pip") + 2] != ["install"]:
        return None
    words = command[command.index("pip") + 2 :]
    what: list[str] = []
    indexes: list[str] = []
    words_left = iter(words)
    for word in words_left:
        if word in INDEX_OPTIONS:
            indexes.append(next(words_left))
        elif word not in QUIET_OPTIONS:
            what.append(word)
    return what, indexes


def build_args() -> dict[str, str]:
    """The Dockerfile's ARGs and their defaults (what a plain `docker build` uses)."""
    found = {}
    for keyword, arguments in instructions(DOCKERFILE):
        if keyword == "ARG":
            name, _, default = arguments.partition("=")
            found[name] = " ".join(shlex.split(default))
    return found


def expanded(arguments: str) -> str:
    """A RUN line with its $ARG and ${ARG} references replaced by their defaults."""
    return re.sub(r"\$\{?(\w+)\}?", lambda name: build_args().get(name[1], name[0]), arguments)


def docker_installs() -> list[tuple[list[str], list[str]]]:
    installs = []
    for keyword, arguments in instructions(DOCKERFILE):
        if keyword == "RUN":
            for command in expanded(arguments).split("&&"):
                found = pip_install(shlex.split(command))
                if found:
                    installs.append(found)
    return installs


def makefile() -> tuple[dict[str, str], dict[str, list[str]]]:
    """The Makefile's plain variables and each target's recipe lines."""
    variables: dict[str, str] = {}
    recipes: dict[str, list[str]] = {}
    target = None
    for line in (REPO / "Makefile").read_text().splitlines():
        if line.startswith("\t") and target:
            recipes[target].append(line.strip())
        elif match := re.fullmatch(r"([A-Z_]+)\s*\??=\s*(.*)", line):
            variables[match[1]] = match[2].strip()
        elif match := re.match(r"([a-z][\w-]*):", line):
            target = match[1]
            recipes[target] = []
    return variables, recipes


def make_app_installs() -> list[tuple[list[str], list[str]]]:
    variables, recipes = makefile()
    installs = []
    for line in recipes["app"]:
        expanded = re.sub(r"\$\((\w+)\)", lambda name: variables.get(name[1], name[0]), line)
        found = pip_install(shlex.split(expanded))
        if found:
            installs.append(found)
    return installs


def image_port() -> int:
    """The port the image's streamlit listens on (its CMD), which its EXPOSE must name too."""
    (cmd,) = [arguments for keyword, arguments in instructions(DOCKERFILE) if keyword == "CMD"]
    words = json.loads(cmd)
    port = int(words[words.index("--server.port") + 1])
    assert ("EXPOSE", str(port)) in instructions(DOCKERFILE)
    return port


def services() -> dict[str, dict]:
    return yaml.safe_load(COMPOSE.read_text())["services"]


def config_command() -> list[str]:
    return shlex.split(services()["config"]["command"])


def option(words: list[str], name: str) -> str:
    return words[words.index(name) + 1]


def test_the_image_installs_what_make_app_installs():
    assert [what for what, _ in docker_installs()] == [what for what, _ in make_app_installs()]
    assert [what for what, _ in make_app_installs()] == [
        ["-r", "requirements.txt"],
        ["--no-deps", f"{PACKAGE}=={PACKAGE_VERSION}"],
    ]


def test_every_mention_of_the_models_pin_names_the_version_the_core_asks_for():
    files = ["README.md", "Makefile", "requirements.txt", "pyproject.toml", "deploy/Dockerfile"]
    pins = {name: re.findall(rf"{PACKAGE}==([\w.]+)", (REPO / name).read_text()) for name in files}
    assert all(pins.values()), pins  # each file names it
    assert {name: set(found) for name, found in pins.items()} == {name: {PACKAGE_VERSION} for name in files}


def test_the_images_torch_comes_from_pytorchs_cpu_index():
    (requirements,) = [indexes for what, indexes in docker_installs() if what == ["-r", "requirements.txt"]]
    assert requirements == [CPU_INDEX]
    # An exact release: pip takes that release's CPU build (2.13.0+cpu) from the index, never another version's.
    assert re.search(r"^torch==\d+(\.\d+)+$", (REPO / "requirements.txt").read_text(), re.MULTILINE)


def test_the_image_is_built_on_the_official_slim_python_by_default():
    assert build_args()["BASE"] == "python:3.11-slim"
    assert instructions(DOCKERFILE)[1] == ("FROM", "${BASE}")


def test_the_builds_ca_bundle_is_a_secret_of_the_install_step_never_a_file_of_the_image():
    (install,) = [arguments for keyword, arguments in instructions(DOCKERFILE) if "-r requirements.txt" in arguments]
    assert install.startswith("--mount=type=secret,id=ca_certs ")
    assert "PIP_CERT=/run/secrets/ca_certs" in install
    copied = " ".join(arguments for keyword, arguments in instructions(DOCKERFILE) if keyword in {"COPY", "ADD"})
    assert not re.search(r"\.(crt|pem)\b|ca-certificates", copied)
    # `COPY . .` copies the repository, less .dockerignore's paths (a newcomer's .venv holds gevent's test
    # certificates): it holds no certificate either
    assert not [path for path in REPO.rglob("*") if path.suffix in {".crt", ".pem"} and not docker_ignores(path)]


def docker_ignores(path: Path) -> bool:
    """Whether .dockerignore leaves path out of the build context (its patterns as this repository writes them:
    names, `**/` prefixes, globs, a leading `/`)."""
    relative = path.relative_to(REPO)
    for line in (REPO / ".dockerignore").read_text().splitlines():
        pattern = line.strip().removeprefix("/").removeprefix("**/")
        if not pattern or pattern.startswith("#"):
            continue
        parts = relative.parts
        if any(PurePath(*parts[: i + 1]).match(pattern) for i in range(len(parts))):
            return True
    return False


def test_the_readme_points_a_newcomers_pip_at_the_same_cpu_index():
    assert f"PIP_EXTRA_INDEX_URL={CPU_INDEX}" in (REPO / "README.md").read_text()


def test_the_image_copies_what_the_editable_install_needs_before_installing():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    packages = [name for name in project["tool"]["setuptools"]["packages"]["find"]["include"] if "*" not in name]
    needed = {"requirements.txt", "pyproject.toml", project["project"]["readme"], *packages}
    copied: set[str] = set()
    for keyword, arguments in instructions(DOCKERFILE):
        if keyword == "RUN" and "-r requirements.txt" in arguments:
            break
        if keyword == "COPY":
            copied |= {source.rstrip("/") for source in arguments.split()[:-1]}
    assert needed <= copied, needed - copied


def test_the_image_installs_the_debian_packages_a_streamlit_cloud_image_gets():
    steps = instructions(DOCKERFILE)
    (copy,) = [arguments.split() for keyword, arguments in steps if keyword == "COPY" and "packages.txt" in arguments]
    assert copy[0] == "packages.txt"
    installs = [arguments for keyword, arguments in steps if keyword == "RUN" and "apt-get install" in arguments]
    assert any(f"< {copy[1]}" in arguments for arguments in installs)


def test_composes_config_command_is_one_serve_py_accepts(tmp_path):
    words = config_command()
    assert words[:2] == ["python", "deploy/serve.py"]
    out = tmp_path / "haproxy.cfg"
    arguments = words[2:]
    arguments[arguments.index("--out") + 1] = str(out)
    subprocess.run([sys.executable, str(REPO / "deploy" / "serve.py"), *arguments], check=True, timeout=60)
    config = out.read_text()
    servers = option(words, "--servers").split(",")
    assert re.findall(r"^\s*server \S+ (\S+) ", config, re.MULTILINE) == servers
    assert f"bind {option(words, '--host')}:{option(words, '--port')}" in config


def test_haproxy_reaches_every_replica_on_the_port_the_image_serves():
    # A replica is a service built from the Dockerfile that runs the image's own command (streamlit).
    replicas = [name for name, service in services().items() if "build" in service and "command" not in service]
    assert len(replicas) >= 2
    assert option(config_command(), "--servers").split(",") == [f"{name}:{image_port()}" for name in replicas]


def test_haproxy_reads_the_file_the_config_service_writes_and_listens_where_compose_publishes():
    haproxy, config = services()["haproxy"], services()["config"]
    out = Path(option(config_command(), "--out"))
    assert Path(option(haproxy["command"], "-f")) == out
    (written,) = config["volumes"]
    (read,) = haproxy["volumes"]
    volume, folder = written.split(":")[:2]
    assert folder == str(out.parent)
    assert read.split(":")[:2] == [volume, folder]  # the same volume, at the same place
    (published,) = haproxy["ports"]
    assert published.rsplit(":", 1)[1] == option(config_command(), "--port")


def test_a_spaces_front_matter_names_the_port_the_image_serves():
    ports = re.findall(r"^app_port: (\d+)$", (REPO / "README.md").read_text(), re.MULTILINE)
    assert ports == [str(image_port())]
