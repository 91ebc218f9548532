"""The chunked layer's knob in a link (`chunk=`), read as the other knobs are: a whole number of tokens among the
offered chunk sizes, a garbled or zero value replaced by the default with a note, another snapped with a note."""

from __future__ import annotations

from explorer import i18n
from explorer.settings import CHUNK_CHOICES, Settings, from_link


def read(**params: str) -> tuple[Settings, list[str]]:
    with i18n.speaking("en"):
        return from_link(params)


def test_an_offered_chunk_is_read_as_it_is_and_goes_back_into_the_link():
    settings, notes = read(design="chunked", chunk="64")
    assert (settings.chunk, notes) == (64, [])
    assert settings.to_link()["chunk"] == "64"
    assert from_link(settings.to_link())[0] == settings


def test_a_chunk_of_zero_or_text_falls_back_to_the_default_and_says_so():
    for raw in ("0", "-8", "eight"):
        settings, notes = read(design="chunked", chunk=raw)
        assert settings.chunk == Settings().chunk, raw
        (note,) = notes
        assert "chunk" in note
        assert raw in note


def test_a_chunk_between_the_offered_sizes_snaps_to_the_nearest_and_says_so():
    settings, notes = read(design="chunked", chunk="100")
    assert settings.chunk == 128
    assert settings.chunk in CHUNK_CHOICES
    (note,) = notes
    assert "chunk" in note
    assert read(chunk="100000")[0].chunk == max(CHUNK_CHOICES)


def test_the_kv_cache_page_says_a_chunked_cache_drops_back_and_never_passes_its_chunk():
    from explorer.kinds.registry import design
    from explorer.kv_cache.text import design_finding
    from explorer.probes.kv_cache import design_trace

    settings = Settings(d_model=64, heads=4, groups=2, chunk=4)
    trace = design_trace(design(settings, "chunked"), prompt_len=3, steps=9, batch=1, seed=0, storage_dtype="bfloat16")
    assert max(trace.nbytes) == 4 * 2 * 2 * 16 * 2  # a chunk of 4 tokens: K and V, 2 heads of 16, bfloat16
    with i18n.speaking("en"):
        said = design_finding("chunked", trace, 2, None)
    assert "drops back to 128 B again and again: it never holds more than 512 B" in said
