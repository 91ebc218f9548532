"""The model's tokenizer: ids as HF's tokenizer for the same GGUF gives them where the two rules agree, the model's
own digit rule where they do not, and labels a learner can read."""

from __future__ import annotations

import pytest

AGREED = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "  leading spaces",
    "trailing spaces   ",
    "tabs\tand\ttabs",
    "line one\nline two\r\nline three",
    "你好，世界！",
    "注意力机制是 Transformer 的核心。",
    "多头潜在注意力（MLA）把 KV 压缩成一个潜向量。",
    "日本語のテキストも少し。",
    "emoji 🙂🚀👩‍💻 mixed",
    "Ünïcödé àccents façade naïve",
    "Prices: $1,234.56 and 3.14159",
    "year 2026, day 23",
    "x = 10 ** 12",
    "def f(x):\n    return x + 1\n",
    "for i in range(10):\n\tprint(i)",
    "<html><body><b>bold</b></body></html>",
    "SELECT * FROM t WHERE id = 7;",
    "https://example.org/path?q=1&r=2",
    "<|im_start|>user\nhi<|im_end|>\n",
    "text<|endoftext|>more",
    "a<file_sep>b",
    "don't won't I'm we'll they've",
    "ALL CAPS SHOUTING",
    "mixed中英text混合",
    "\u200bzero width",
    "control \x07 bell",
    "   ",
    "\n",
    "a" * 300,
    "Ωmega αβγ ∑∫√",
]


@pytest.mark.parametrize("text", AGREED)
def test_ids_equal_hf_tokenizer(lm, hf_tokenizer, text):
    assert lm.encode(text) == hf_tokenizer.encode(text, add_special_tokens=False)


def test_digits_are_split_one_by_one_as_the_model_was_trained(lm):
    ids = lm.encode("12345")
    assert len(ids) == 5
    assert lm.decode(ids) == "12345"


def test_whitespace_before_a_digit_follows_the_model_not_transformers(lm, hf_tokenizer):
    # llama.cpp's "smollm" rule isolates the digit first, so the whitespace run before it is a piece of its own,
    # all of it one token here; transformers' GGUF tokenizer (no digit step) lets GPT-2's regex give the last " "
    # to the digit's piece (" 0", which the vocabulary, trained on single digits, spells as " " and "0").
    text = "\n\n  0"
    ours = lm.encode(text)
    assert lm.token_strings(ours) == ["↵↵␣␣", "0"]
    theirs = hf_tokenizer.encode(text, add_special_tokens=False)
    assert lm.token_strings(theirs) == ["↵↵␣", "␣", "0"]
    assert lm.decode(ours) == text


@pytest.mark.parametrize("text", ["你好", "注意力 attention", "🙂 ok", "line\n\tend  "])
def test_ids_decode_back_to_the_text(lm, text):
    assert lm.decode(lm.encode(text)) == text


def test_control_tokens_are_single_tokens(lm):
    spec = lm.tokenizer.spec
    ids = lm.encode("<|im_start|>user")
    assert ids[0] == spec.tokens.index("<|im_start|>")
    assert lm.token_strings(ids)[0] == "<|im_start|>"


def test_chinese_labels_show_each_token_and_the_bytes_of_split_characters(lm):
    ids = lm.encode("你好")
    labels = lm.token_strings(ids)
    assert len(labels) == len(ids)
    # every byte of both characters is accounted for, in order
    assert "".join(label.split("[")[0] for label in labels).replace("你你", "你").replace("好好", "好") == "你好"
    assert b"".join(lm.tokenizer.token_bytes(i) for i in ids) == "你好".encode()
    assert any("[" in label and label.endswith("/3]") for label in labels), labels


def test_labels_make_whitespace_visible(lm):
    assert lm.token_strings(lm.encode("a b\n")) == ["a", "␣b", "↵"]


def test_chat_ids_equal_hf_chat_template(lm, hf_tokenizer):
    messages = [{"role": "user", "content": "What is grouped-query attention? 请用一句话回答。"}]
    ours = lm.chat_ids(messages)
    theirs = hf_tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    theirs = theirs["input_ids"] if isinstance(theirs, dict) or hasattr(theirs, "keys") else theirs
    assert ours == list(theirs)
    assert lm.decode(ours).endswith("<|im_start|>assistant\n")
