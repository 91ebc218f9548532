"""Shared helpers for the AppTest suite: open a page through a link, and read back what was sent to the browser."""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest.mock import patch

from hypothesis import strategies as st
from streamlit.runtime.scriptrunner.script_cache import ScriptCache
from streamlit.testing.v1 import AppTest
from streamlit.util import calc_hash

from explorer.pages import PAGES

# What a run sent the browser is read back by explorer.sent, beside the code that sends it (benchmarks/app.py reads
# it too); the tests import those readers from here as before.
from explorer.sent import all_elements as all_elements
from explorer.sent import chart_bytes as chart_bytes
from explorer.sent import chart_payload as chart_payload
from explorer.sent import chart_specs as chart_specs
from explorer.sent import charts as charts
from explorer.sent import decode as decode
from explorer.sent import payload_bytes as payload_bytes
from explorer.settings import (
    CHUNK_CHOICES,
    D_MODEL_CHOICES,
    DESIGNS,
    LATENT_CHOICES,
    RATE_CHOICES,
    SINK_CHOICES,
    STATE_DIM_CHOICES,
    TOPK_CHOICES,
    WINDOW_CHOICES,
    Settings,
    bits_choices,
    groups_choices,
    heads_choices,
    normalize,
    rope_dim_choices,
)
from explorer.state import SETTINGS_KEY
from explorer.verbatim import shown_text

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 180  # seconds for one run; generous because the machine is shared (a run normally takes well under 1 s)

# The two ends of the sidebar's ranges, as named in the brief (and ARCHITECTURE.md, Budgets).
SMALLEST = Settings(d_model=16, heads=1, groups=1, latent=4, rope_dim=2, seq_len=1, batch=1)
LARGEST = Settings(
    d_model=8192, heads=128, groups=128, latent=4096, rope_dim=64, seq_len=8192, batch=128, dtype="float32"
)
LARGEST_BY_GROUPS = {groups: replace(LARGEST, groups=groups) for groups in (128, 8, 1)}

# Each AppTest run compiles app.py and its page anew (a ScriptCache of its own per run, Streamlit's magic rewriting
# the syntax tree: ~10 ms a file, thousands of runs a suite), where a server compiles them once for all sessions.
# One cache for the process, keyed on the file's path, modification time and size: a script rewritten is recompiled.
_compiled: dict[tuple[str, int, int], Any] = {}
_compile = ScriptCache.get_bytecode


def _shared_bytecode(self: ScriptCache, script_path: str) -> Any:
    stat = os.stat(script_path)
    key = (os.path.abspath(script_path), stat.st_mtime_ns, stat.st_size)
    if key not in _compiled:
        _compiled[key] = _compile(self, script_path)
    return _compiled[key]


ScriptCache.get_bytecode = _shared_bytecode  # type: ignore[method-assign]


LINK_WARNING = "This link had settings"  # how explorer.state opens the one warning about a link


def no_exception(at: AppTest, *, nor_error: bool = False) -> None:
    """The run raised nothing (nor_error: and showed no st.error either); a failure lists what it showed."""
    assert not at.exception, [e.value for e in at.exception]
    if nor_error:
        assert not at.error, [e.value for e in at.error]


NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def numbers(text: str) -> list[float]:
    """The numbers a text states, in order, as values ("8,192 tokens" -> 8192.0)."""
    return [float(found.replace(",", "")) for found in NUMBER.findall(text)]


def states(text: str, *expected: float) -> bool:
    """Some line of text states these numbers one after another, whatever its words: a numbers test that a copy edit
    does not fail ("Showing heads 0–15 of 128" states 0, 15, 128)."""
    for line in text.splitlines():
        found = numbers(line)
        if any(found[i : i + len(expected)] == list(expected) for i in range(len(found))):
            return True
    return False


def page_file(name: str) -> str:
    return str(REPO / PAGES[name].path)


def open_page(name: str, query: dict | None = None) -> AppTest:
    """Open a page as a link to it would: app.py runs, st.navigation picks the page by its URL path, and the query
    parameters (values: str, or list[str] for repeated keys) are the link's.
    """
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=TIMEOUT)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.switch_page(PAGES[name].path)  # before the first run AppTest names the page by its file name
    at.run()
    # Private: AppTest has no public word for which page st.navigation ran (a title would not tell two pages apart).
    assert at._finished_page_script_hash == calc_hash(name), f"the link did not open page {name!r}"
    return at


def open_script(path: Path, query: dict | None = None) -> AppTest:
    at = AppTest.from_file(str(path), default_timeout=TIMEOUT)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    return at.run()


def verbatim(root) -> list[str]:
    """The texts shown as they are (explorer.verbatim: a link, a decode log, an answer, an error) under root (at.main,
    at.sidebar, or the whole AppTest), in page order."""
    return [text for element in root.get("html") if (text := shown_text(element.value)) is not None]


def sidebar_settings(at: AppTest) -> Settings:
    """The settings the sidebar widgets show (read from the widgets themselves, not from session state). A page that
    reads no setting draws no widget for them: there, the settings the session keeps for the other pages (as for the
    designs' knobs a page does not draw)."""
    kept = at.session_state[SETTINGS_KEY]
    assert isinstance(kept, Settings)
    if not at.sidebar.select_slider:
        return kept
    sliders = {w.key.removeprefix("setting_"): w.value for w in at.sidebar.select_slider}
    pills = {
        w.key.removeprefix("setting_"): tuple(w.value)
        for w in at.sidebar.button_group
        if w.key in ("setting_variants", "setting_designs")
    }
    dtype = next(w for w in at.sidebar.radio if w.key == "setting_dtype").value
    seed = next(w for w in at.sidebar.number_input if w.key == "setting_seed").value
    return replace(kept, dtype=dtype, seed=int(seed), **pills, **sliders)


def link_warnings(at: AppTest) -> list[str]:
    return [w.value for w in at.warning if w.value.startswith(LINK_WARNING)]


def is_valid(settings: Settings) -> bool:
    fixed, notes = normalize(settings)
    return fixed == settings and not notes


@st.composite
def offered_settings(draw, d_models=D_MODEL_CHOICES) -> Settings:
    """Any combination the sidebar offers (every design chosen)."""
    d_model = draw(st.sampled_from(d_models))
    heads = draw(st.sampled_from(heads_choices(d_model)))
    settings = Settings(
        d_model=d_model,
        heads=heads,
        groups=draw(st.sampled_from(groups_choices(heads))),
        latent=draw(st.sampled_from(LATENT_CHOICES)),
        rope_dim=draw(st.sampled_from(rope_dim_choices(d_model // heads))),
        designs=DESIGNS,
        window=draw(st.sampled_from(WINDOW_CHOICES)),
        sinks=draw(st.sampled_from(SINK_CHOICES)),
        topk=draw(st.sampled_from(TOPK_CHOICES)),
        rate=draw(st.sampled_from(RATE_CHOICES)),
        state_dim=draw(st.sampled_from(STATE_DIM_CHOICES)),
        bits=draw(st.sampled_from(bits_choices(d_model // heads))),
        chunk=draw(st.sampled_from(CHUNK_CHOICES)),
    )
    assert normalize(settings) == (settings, [])
    return settings


def run_fragment(at: AppTest, key: str) -> AppTest:
    """Rerun as the browser does after a widget inside the fragment st.fragment(key=key) changed: that fragment
    alone, not the page (AppTest's run() always reruns the page whole). What AppTest shows after it is the fragment's
    elements only."""
    from streamlit.testing.v1 import local_script_runner

    # Private: AppTest has no word for a fragment's run; its runner builds the browser's rerun request here.
    ids = at._fragment_storage.resolve_target(key)
    request = local_script_runner.RerunData
    with patch.object(local_script_runner, "RerunData", lambda **given: request(**given, fragment_id=ids[0])):
        return at.run()
