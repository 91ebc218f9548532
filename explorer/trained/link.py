"""The trained model page's parameters in the link, and the bounds of what it runs: each a control on the page, each
parsed from any text. The default text and prompt are in the page's language."""

from __future__ import annotations

from explorer.i18n import language
from explorer.params import IntRange, Text

MAX_TEXT_CHARS = 2000  # what the text box and a link take
MAX_TOKENS = 128  # tokens run through the model: 270 maps of 128 x 128 stay cheap to compute and to send
MAX_NEW_TOKENS = 48

# The defaults are in the page's language, so that their tokens read in it. English teaches the attention lesson
# best (the model was trained mostly on English: one token per word), and the Chinese page says so and offers the
# English sentence at a click; its Chinese default shows how the model splits Chinese (mostly into UTF-8 bytes).
DEFAULT_TEXTS = {
    "en": "The cat sat on the mat because the mat was warm. Later the dog came in, saw the cat on the mat, and lay "
    "down beside it.",
    "zh": "猫坐在垫子上，因为垫子很暖和。后来狗走了进来，看见猫在垫子上，就在它旁边躺下了。",
}
DEFAULT_PROMPTS = {
    # Answered correctly and at length (~30 tokens) by the 135M model; its answer about KV caches was wrong.
    "en": "In one sentence, what is a neural network?",
    "zh": "用两句话说明：KV 缓存存的是什么？",
}
DEFAULT_TEXT = DEFAULT_TEXTS["en"]
DEFAULT_PROMPT = DEFAULT_PROMPTS["en"]
PROMPT_CHARS = 300

TEXT = Text("tm_text", DEFAULT_TEXT, MAX_TEXT_CHARS)
LAYER = IntRange("tm_layer", 0, 29, 3)
HEAD = IntRange("tm_head", 0, 8, 0)
QUERY = IntRange("tm_query", 0, MAX_TOKENS - 1, 12)
PROMPT = Text("tm_prompt", DEFAULT_PROMPT, PROMPT_CHARS)


def default_text() -> str:
    return DEFAULT_TEXTS[language()]


def default_prompt() -> str:
    return DEFAULT_PROMPTS[language()]


def text_param() -> Text:
    """TEXT with this run's language's default."""
    return Text(TEXT.name, default_text(), MAX_TEXT_CHARS)


def prompt_param() -> Text:
    return Text(PROMPT.name, default_prompt(), PROMPT_CHARS)


STEP = IntRange("tm_step", 1, MAX_NEW_TOKENS, MAX_NEW_TOKENS)
