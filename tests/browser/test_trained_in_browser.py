"""The trained model's page in a real browser: Chinese typed into the text box comes back as one chip per token of
the model's own tokenizer, and the link carries the text."""

from __future__ import annotations

from attn_core.pretrained import load_pretrained

from .conftest import url_params

# A first view runs the model twice (every map of the text, then 48 tokens of writing) at one thread: on a loaded
# 2-core machine that can take minutes, so this test waits on its conditions for longer than the suite's default.
MODEL_SECONDS = 300


def test_typed_chinese_text_shows_one_label_per_model_token(server, page):
    text = "分组查询注意力"
    lm = load_pretrained()  # also converts the GGUF file into the cache here, not inside the server's first run
    expected = lm.token_strings(lm.encode(text))
    page.set_default_timeout(MODEL_SECONDS * 1000)
    page.goto(f"{server.url}/trained")
    page.wait_for_selector('.token-chips[data-of="text"] .token-chip', timeout=MODEL_SECONDS * 1000)
    box = page.get_by_label("Text (English or Chinese", exact=False)
    box.fill(text)
    box.press("Control+Enter")  # a text area applies its value on Ctrl+Enter (or on leaving it)
    chips = '.token-chips[data-of="text"] .token-chip'  # the text's split (the message's has its own)
    page.wait_for_function(
        "([chips, n]) => document.querySelectorAll(chips).length === n",
        arg=[chips, len(expected)],
        timeout=MODEL_SECONDS * 1000,
        polling=100,
    )
    labels = page.locator(chips).all_inner_texts()
    assert labels == expected
    assert url_params(page)["tm_text"] == text
