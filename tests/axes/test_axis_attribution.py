"""Which axis a design cuts does not depend on the length it is read at (issue 47): a window or a pooled entry cuts
tokens, a fixed state or a shared layer cuts layers, the entry's numbers cut width, at every length of the grid and
for every published model, as the lesson's four-axes step answers."""

from __future__ import annotations

import pytest

from explorer.probes.axes import TOKEN_GRID, axis_cuts, published_curves

# the kinds whose layers keep entries of tokens, each published one named (a new kind must be placed here)
ENTRY_KINDS = {"full", "sliding", "mla", "sparse", "csa", "hca", "chunked", "nope"}
STATE_KINDS = {"linear", "mamba"}
NO_CACHE_KINDS = {"shared", "moe", "mlp"}
WINDOWED = {"sliding", "chunked", "csa", "hca"}  # kinds that keep fewer entries than tokens


@pytest.fixture(scope="module")
def drawn():
    models, missing = published_curves()
    assert not missing
    return models


def test_every_published_kind_is_placed(drawn):
    kinds = {kind.kind for model in drawn for kind in model.kinds}
    assert kinds <= ENTRY_KINDS | STATE_KINDS | NO_CACHE_KINDS
    for model in drawn:
        for kind in model.kinds:
            assert kind.state == (kind.kind in STATE_KINDS), (model.name, kind.kind)


@pytest.mark.parametrize("measure", ["held", "read"])
def test_each_design_is_credited_to_the_same_axis_at_every_length(drawn, measure):
    for model in drawn:
        kinds = {kind.kind for kind in model.kinds}
        widths, layer_cuts = set(), []
        for tokens in TOKEN_GRID:
            cut = axis_cuts(model, tokens, measure)
            assert set(cut.cache_kinds) == kinds & ENTRY_KINDS, model.name
            widths.add(round(cut.width or 0, 9))
            layer_cuts.append(cut.layers)
            if not kinds & (STATE_KINDS | {"shared"}):
                assert cut.layers == pytest.approx(1), (model.name, tokens)  # no state, no shared layer: no layers cut
            if measure == "held" and not kinds & WINDOWED:
                assert cut.tokens == pytest.approx(1), (model.name, tokens)  # every token kept: no tokens cut
            if measure == "held" and kinds & WINDOWED:
                assert cut.tokens >= 1 - 1e-12, (model.name, tokens)  # a window never keeps more than every token
        assert len(widths) == 1, model.name  # the entry's width is the design's, whatever the length
        # a state's cut grows with the length it is compared at, and stays on the layers axis
        assert layer_cuts == sorted(layer_cuts), model.name


def test_the_lessons_answer_holds_at_every_length(drawn):
    """ "A window cuts tokens": a model with window layers is cut on tokens, never on layers, once T reaches W."""
    by_name = {model.name: model for model in drawn}
    for name, window in (("Mistral 7B", 4096), ("Gemma 3 27B", 1024), ("gpt-oss-120b", 128)):
        for tokens in TOKEN_GRID:
            cut = axis_cuts(by_name[name], tokens)
            assert cut.layers == pytest.approx(1)
            assert (cut.tokens > 1) == (tokens >= window), (name, tokens)  # it keeps W - 1


def test_the_product_is_mha_over_the_cache_at_every_length(drawn):
    """The four factors multiply to MHA's 16-bit cache over the model's, whichever axis carries what."""
    for model in drawn:
        for tokens in TOKEN_GRID:
            cut = axis_cuts(model, tokens)
            mha = model.layers * model.mha_entry_numbers * 2 * tokens * model.batch
            assert cut.total == pytest.approx(mha / model.held[model.at(tokens)], rel=1e-9), (model.name, tokens)
