"""The proof of explorer/kinds/: a kind the app has never shown (Qwen3-Next's gated full attention, in attn_core as
GatedAttention) is one Kind subclass and its registry line, and the sidebar's names, the overview's table and the KV
cache page's trace take it from there, with the core's bytes."""

from __future__ import annotations

from typing import Any

import pytest

from attn_core import GatedAttention, GatedAttentionConfig
from attn_core.gated import cache_bytes_formula
from explorer.glossary import design_name
from explorer.kinds import registry
from explorer.kinds.kind import Design, Kind
from explorer.probes.kv_cache import design_trace
from explorer.probes.overview import compare_designs
from explorer.settings import Settings


class Gated(Kind):
    def design(self, settings: Settings) -> Design:
        s = settings
        config = GatedAttentionConfig(
            d_model=s.d_model, n_heads=s.heads, n_kv_heads=s.groups, head_dim=s.head_dim, rotary_dim=s.rope_dim
        )
        return Design(self, config)

    def layer_class(self) -> Any:
        return GatedAttention

    def formula_bytes(self, design: Design, tokens: int, batch: int, element: int, new_tokens: int) -> tuple[int, int]:
        held = cache_bytes_formula(design.config, tokens, batch, element)  # type: ignore[arg-type]
        return held, held  # a full layer reads all it holds


GATED = Gated(key="gated", name="Gated attention", help="Qwen3-Next's full layers.", color="#000000", knobs=())
SMALL = Settings(d_model=64, heads=4, groups=2, rope_dim=8)


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setitem(registry.KINDS, "gated", GATED)
    return registry.design(SMALL, "gated")


def test_its_name_comes_from_its_kind(registered):
    assert design_name("gated") == "Gated attention"


def test_the_overview_measures_it_against_the_core(registered):
    (row,) = compare_designs({"gated": registered}, SMALL.config("mha"), batch=2, seq_len=12, dtype="bfloat16")
    held = cache_bytes_formula(registered.config, 12, 2, 2)  # type: ignore[arg-type]
    assert (row.cache_bytes_measured, row.cache_bytes_formula) == (held, held)


def test_the_kv_cache_page_traces_it(registered):
    trace = design_trace(registered, prompt_len=3, steps=4, batch=1, seed=0, storage_dtype="float16")
    assert trace.nbytes == trace.formula_nbytes
    assert trace.nbytes[-1] == cache_bytes_formula(registered.config, 7, 1, 2)  # type: ignore[arg-type]


def test_every_kind_a_page_draws_has_its_figure_and_its_words():
    """A kind that says it maps (heatmaps) or decodes (mapping) has that page's figure or caption by its link value."""
    from explorer.heatmaps.figures import DESIGN_FIGURES
    from explorer.mapping.reads import SAID

    assert {name for name, kind in registry.KINDS.items() if kind.maps} == set(DESIGN_FIGURES)
    assert {name for name, kind in registry.KINDS.items() if kind.decodes} == set(SAID)
