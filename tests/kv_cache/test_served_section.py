"""The KV cache page's published models, as HF's modules hold their caches and as served (kv_storage), and the
published claims beside what the core measures: through AppTest, in both languages."""

from __future__ import annotations

import pytest

from explorer.i18n import format_bytes
from explorer.probes.claims import published_claims
from explorer.served import TABLE_TOKENS
from tests.kv_cache.test_page import open_page


def table(at):
    return at.dataframe[-1].value.set_index("Model")


def test_an_old_link_shows_the_caches_as_hfs_modules_hold_them():
    at = open_page({})
    assert not at.exception, [e.value for e in at.exception]
    assert at.segmented_control(key="view_kv_storage").value == "reference"
    rows = table(at)
    # DeepSeek-V3.2 in bf16: 61 layers x (512 + 64 + 128) numbers x 2 bytes a token
    assert rows.loc["DeepSeek-V3.2", "Held"] == format_bytes(61 * 704 * 2 * TABLE_TOKENS)
    assert rows.loc["DeepSeek-V3.2", "Of HF's"] == "100%"


def test_as_served_v32_holds_61_x_788_bytes_a_token_and_llama_its_reference():
    at = open_page({"kv_storage": "served"})
    assert not at.exception, [e.value for e in at.exception]
    rows = table(at)
    assert rows.loc["DeepSeek-V3.2", "Held"] == format_bytes(61 * 788 * TABLE_TOKENS)
    assert rows.loc["DeepSeek-V3.2", "Of HF's"] == "56%"  # 788 / 1408
    assert rows.loc["Llama 3 8B", "Of HF's"] == "100%"
    shown = " ".join(m.value for m in at.markdown)
    assert "deepseek-ai/FlashMLA" in shown


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_claims_are_tabled_with_their_sources(lang):
    at = open_page({"lang": lang, "kv_storage": "served"})
    assert not at.exception, [e.value for e in at.exception]
    shown = " ".join(m.value for m in at.markdown)
    for claim in published_claims():
        assert claim.source in shown


def test_presenter_mode_as_served_raises_nothing():
    at = open_page({"kv_storage": "served", "present": "1", "lang": "zh"})
    assert not at.exception, [e.value for e in at.exception]
