"""The axes page through AppTest, opened by a link as a reader would: the published models' curves it sends are the
probe's measurements, in both languages, under the payload budget; a bad link value is reported and replaced; a bad
config in the box is named beside the core's or JSON reader's message, with nothing else on the page disturbed."""

from __future__ import annotations

import json
import re

import pytest

from attn_core import PUBLISHED
from explorer.probes.axes import MAX_CONFIG_CHARS, published_curves
from tests.app.helpers import chart_bytes, chart_specs, open_page, verbatim

PAYLOAD_BUDGET = 1_000_000  # bytes of chart data per page (ARCHITECTURE.md, Budgets)


def curves_sent(spec: dict) -> dict[str, list[tuple[int, int]]]:
    """Each model's (tokens, bytes) points as drawn, its solid and dotted parts joined."""
    points: dict[str, set] = {}
    for trace in spec["data"]:
        if trace.get("mode") == "lines" and "name" in trace:  # not the leaders to the names at the lines' ends
            points.setdefault(trace["name"], set()).update(zip(trace["x"], trace["y"], strict=True))
    return {name: sorted(found) for name, found in points.items()}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_published_models_chart_is_the_measured_curves(lang):
    at = open_page("axes", {"lang": lang})
    assert not at.exception, [e.value for e in at.exception]
    models, missing = published_curves()
    sent = curves_sent(chart_specs(at)[0])
    assert sent == {m.name: list(zip(m.tokens, m.held, strict=True)) for m in models}
    shown = " ".join(info.value for info in at.info)
    for model in missing:  # named on the page, not dropped
        assert model.name in shown


def test_the_read_toggle_draws_what_a_decoding_step_reads():
    at = open_page("axes", {"ax_measure": "read", "batch": "4", "dtype": "float32"})
    models, _ = published_curves(batch=4, dtype="float32")
    sent = curves_sent(chart_specs(at)[0])
    assert sent == {m.name: list(zip(m.tokens, m.read, strict=True)) for m in models}


def test_the_table_has_a_row_per_layer_kind_at_the_chosen_length():
    at = open_page("axes", {"ax_tokens": "4096"})
    models, _ = published_curves()
    table = at.dataframe[0].value
    assert len(table) == sum(len(m.kinds) for m in models)
    mistral = table[table["Model"] == "Mistral 7B"].iloc[0]
    assert (mistral["Layers"], mistral["Held"]) == ("32", "511.88 MiB")  # 32 · 2 · 8 · 128 · 4095 · 2 bytes


def test_a_bad_link_value_is_reported_and_replaced():
    at = open_page("axes", {"ax_tokens": "banana", "ax_measure": "everything"})
    assert not at.exception
    warned = " ".join(w.value for w in at.warning)
    assert "ax_tokens" in warned
    assert "ax_measure" in warned
    assert at.select_slider[0].value == 131072


def test_the_charts_stay_under_the_payload_budget():
    at = open_page("axes", {"ax_config": json.dumps(PUBLISHED["Gemma 3 27B"])})
    assert len(chart_specs(at)) == 3
    assert chart_bytes(at) <= PAYLOAD_BUDGET


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_bad_config_is_named_and_nothing_else_moves(lang):
    at = open_page("axes", {"lang": lang})
    before = chart_specs(at)
    at.text_area[0].input('{"model_type": "llama", "hidden_size": 4096').run()
    assert not at.exception
    assert len(at.error) == 1
    assert "Expecting" in verbatim(at.main)[-1]  # the JSON reader's own message, verbatim
    assert chart_specs(at) == before  # the published models' charts as they were


def pasted(config: dict, lang: str):
    at = open_page("axes", {"lang": lang})
    at.text_area[0].input(json.dumps(config)).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


LLAMA = PUBLISHED["Llama 3 8B"]
YARN = {"rope_type": "yarn", "factor": "4", "original_max_position_embeddings": 8192}
# config -> the words its message must hold, in each language (field names are code in both)
FIELD_MESSAGES = {
    "missing": ({k: v for k, v in LLAMA.items() if k != "num_attention_heads"}, ["`num_attention_heads`"]),
    "text for a number": (LLAMA | {"rope_scaling": YARN}, ["`rope_scaling.factor`", '`"4"`']),
    "heads not grouped": (LLAMA | {"num_attention_heads": 16, "num_key_value_heads": 5}, ["`num_key_value_heads`"]),
    "too wide": (LLAMA | {"hidden_size": 10**15}, ["`hidden_size`", "1000000000000000"]),
}


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("case", FIELD_MESSAGES)
def test_a_refused_field_is_named_in_the_readers_language_with_no_english_sentence(case, lang):
    config, named = FIELD_MESSAGES[case]
    at = pasted(config, lang)
    message = at.error[0].value
    if lang == "zh":
        assert re.search("[\u4e00-\u9fff]", message)
        assert "must" not in message
    for words in named:
        assert words in message
    assert not verbatim(at.main)  # the core's English sentence is not shown: the page said it all
    assert "missing" not in message or case == "missing"  # 16 heads with 5 KV heads: no field called missing


def test_heads_not_grouped_name_both_fields_and_no_torch_text():
    at = pasted(LLAMA | {"num_attention_heads": 16, "num_key_value_heads": 5}, "en")
    assert "`num_attention_heads` (16) is not a multiple of `num_key_value_heads` (5)" in at.error[0].value


@pytest.mark.parametrize(
    ("lang", "lead"), [("en", "The core cannot read this config"), ("zh", "核心库无法读取这个配置")]
)
def test_a_message_the_page_cannot_word_has_a_translated_lead_in_and_the_cores_sentence(lang, lead):
    at = pasted(PUBLISHED["Mistral 7B"] | {"sliding_window": 65536}, lang)
    assert lead in at.error[0].value
    assert "larger than the context" in verbatim(at.main)[-1]


def test_a_size_past_any_machine_names_the_limit_in_chinese():
    config = LLAMA | {"hidden_size": 2**19, "num_attention_heads": 2**12, "num_key_value_heads": 2**12}
    at = pasted(config | {"head_dim": 2**19}, "zh")
    message = at.error[0].value
    assert "超过任何一台机器的内存" in message
    assert "1,024.00 TiB" in message  # the limit, 2^50 bytes


def test_a_huge_paste_is_refused_whole_and_the_box_keeps_its_config():
    good = json.dumps(PUBLISHED["Mistral 7B"])
    at = open_page("axes", {"lang": "en", "ax_config": good})
    at.text_area[0].input(" " * (MAX_CONFIG_CHARS + 1) + good).run()
    assert not at.exception
    assert at.text_area[0].value == good
    assert any("characters" in e.value for e in at.error)
    assert len(chart_specs(at)) == 3  # the box's model is still drawn


def test_a_published_model_picked_fills_the_box_and_is_drawn():
    at = open_page("axes", {"lang": "en"})
    at.selectbox(key="axes_start").select("gpt-oss-120b").run()
    assert json.loads(at.text_area[0].value) == PUBLISHED["gpt-oss-120b"]
    mine = chart_specs(at)[2]
    lines = [t for t in mine["data"] if t.get("mode") == "lines" and "name" in t]  # not the leaders to their names
    names = list(dict.fromkeys(trace["name"] for trace in lines))
    assert len(names) == 3  # the whole model, then its sliding and full layers
    assert names[0].startswith("gpt-oss-120b")  # its name, not its model_type
    assert any("**gpt-oss-120b (`gpt_oss`)**" in m.value for m in at.markdown)


@pytest.mark.parametrize(
    ("lang", "button", "limit"), [("en", "Upload", "At most 1 MB per file"), ("zh", "上传", "每个文件至多 1 MB")]
)
def test_the_upload_box_says_its_button_and_limit_in_the_readers_language(lang, button, limit):
    """Streamlit writes both in English; the box's CSS draws the page's words over them (explorer/uploader.py)."""
    at = open_page("axes", {"lang": lang})
    styles = [element.value for element in at.get("html") if ".st-key-axes_upload" in element.value]
    assert len(styles) == 1
    assert f'content: "{button}"' in styles[0]
    assert f'content: "{limit}"' in styles[0]  # the server's maxUploadSize, .streamlit/config.toml's 1 MB
