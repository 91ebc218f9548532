"""What a page shows in words, collected from an AppTest run: every string a reader can see (markdown, captions,
alerts, labels, help texts, options, table headers and cells, chart titles, axes, legends, hover templates and
annotations), minus the user's own text (what they typed, and its tokens) which stays in its own language."""

from __future__ import annotations

import re

from google.protobuf.message import Message

from explorer.verbatim import SHOWN_TEXT
from tests.app.helpers import all_elements, chart_specs

# Proto fields that are not shown as words: ids, keys, data, styles, URLs, icons, the user's own text.
SKIPPED_FIELDS = {
    "id",
    "form_id",
    "key",
    "spec",
    "data",
    "arrow_data",
    "styler",
    "url",
    "icon",
    "page_script_hash",
    "page",
    "theme",
    "css",
    "uuid",
    "selection_mode",
    "format",
    "default",
    "value",
    "set_value",
    "raw_value",
    "language",
    "avatar",
    "color",
    "width",
    "height",
    "fragment_id",
    "column_config",
    "columns",
    "use_container_width",
    "type",
    "mime",
    "file_name",
    "query_string",
    "deck_json",
    "tooltip",
    "payload",
    "code_text",
    "divider",
}
# Chart JSON keys whose strings are data (categories, tokens, ids), not words.
DATA_KEYS = {
    "x",
    "y",
    "z",
    "customdata",
    "ids",
    "bdata",
    "dtype",
    "shape",
    "colorscale",
    "color",
    "type",
    "mode",
    "xref",
    "yref",
    "xanchor",
    "yanchor",
    "family",
    "symbol",
    "fill",
    "hoverinfo",
    "ticksuffix",
    "tickformat",
    "hoverformat",
    "textposition",
    "bgcolor",
    "bordercolor",
    "fillcolor",
    "xaxis",
    "yaxis",
    "coloraxis",
    "legendgroup",
    "uid",
    "dash",
    "pattern",
    "templateitemname",
    "layer",
    "orientation",
    "anchor",
    "overlaying",
    "side",
    "align",
    "valign",
    "barmode",
    "categoryorder",
    "method",
    "label_",
    "args",
    "frame",
    "transition",
    "easing",
    "redraw",
    "matches",
    "scaleanchor",
    "constrain",
    "autorange",
    "rangemode",
    "zerolinecolor",
    "gridcolor",
    "linecolor",
    "plot_bgcolor",
    "paper_bgcolor",
    "template",
    "hovermode",
    "dragmode",
    "ticklabeloverflow",
    "position",
    "texttemplate_",
    "groupclick",
    "direction",
    "insidetextanchor",
    "constraintext",
}


def _proto_strings(message: Message, out: list[str]) -> None:
    for field, value in message.ListFields():
        if field.name in SKIPPED_FIELDS:
            continue
        values = value if field.is_repeated else [value]
        for item in values:
            if isinstance(item, Message):
                _proto_strings(item, out)
            elif isinstance(item, str) and item.strip():
                out.append(item)


def _chart_strings(spec, out: list[str], key: str = "") -> None:
    if isinstance(spec, dict):
        for name, item in spec.items():
            if name not in DATA_KEYS and not name.endswith(("mode", "ref", "anchor", "position", "src")):
                _chart_strings(item, out, name)
    elif isinstance(spec, list):
        for item in spec:
            _chart_strings(item, out, key)
    elif isinstance(spec, str) and spec.strip() and not re.fullmatch(r"#?[0-9a-fA-F]{3,8}|rgba?\(.*\)", spec):
        out.append(spec)


def user_text(at) -> list[str]:
    """What the user typed (text areas and inputs): it and the model's tokens of it are theirs, not ours."""
    return [w.value for w in [*at.text_area, *at.text_input] if w.value]


def visible_texts(at) -> list[str]:
    out: list[str] = []
    for node in all_elements(at):
        proto = getattr(node, "proto", None)
        if node.type == "html" and SHOWN_TEXT.search(proto.body):
            # text shown as it is (a link, a log, a model's answer) is in no language of ours; its copy button is
            out.append(SHOWN_TEXT.sub("", proto.body))
        elif proto is not None and node.type not in ("bidi_component", "arrow_data_frame", "arrow_table"):
            _proto_strings(proto, out)
    for frame in [*at.dataframe, *at.table]:
        table = frame.value
        out += [str(name) for name in table.columns]
        out += [cell for cell in table.astype(object).fillna("").astype(str).to_numpy().ravel().tolist() if cell]
        if table.index.dtype == object:
            out += [str(name) for name in table.index]
    for spec in chart_specs(at):
        _chart_strings(spec, out)
    return out


# Words a Chinese page may show in Latin letters: the variants' and the notes' abbreviations, symbols, units, the
# names of models, libraries and formats. Anything with a digit, an underscore or inside $...$ or `...` is a symbol.
ALLOWED_LATIN = set(
    """MHA MQA GQA MLA KV RoPE QK QKᵀ Q K V KiB MiB GiB TiB kFLOP MFLOP GFLOP TFLOP FLOP FLOPs B FP BF bf fp
    UTF TransMLA BKV Adam Ainslie Ji Meng SmolLM SmolLM2 DeepSeek Flash Kimi Linear Next gpt oss Llama LLaMA Mistral Falcon Phi BLOOM Qwen Gemma GPT HF GGUF PyTorch Streamlit Plotly CSV JSON URL GIF
    Scout
    Nemotron Nano Mamba MoE
    PCA SVD SwiGLU RMSNorm MLP CSA HCA DSA mod BPE EOS BOS softmax Softmax SDPA YaRN JS ID IDs GPU CPU RAM RSS PPL kv_lora_rank
    head_dim d h g L S D H G T N P C d_model d_h d_c k v q o x c W max min mean log exp sin cos mha mqa gqa mla
    float float16 float32 bfloat16 int8 True False None Step Play ms pt dtype seed batch lang en zh English Pareto
    MB GB KB TB k M e.g i.e vs StreamingLLM KIVI Gated DeltaNet uptraining Python KDA""".split()  # noqa: SIM905  (a word list reads as words, not as quoted strings)
)
ALLOWED_LATIN |= {"GLM", "MiniMax"}  # the published GLM-5 and MiniMax models' names
ALLOWED_LATIN |= {"Granite"}  # IBM's Granite 4.0-H, a Mamba-2 hybrid
# Scripts (never shown), maths, code, markup, placeholders, URLs, and link values echoed back in quotes ('banana').
_SYMBOLIC = re.compile(
    r"(?s:<script\b.*?</script>)|'[^'\n]*'|\$[^$]*\$|`[^`]*`|<[^>]+>|&\w+;|%\{[^}]*\}|\{[^}]*\}|https?://\S+"
    r"|\]\([^)\s]*\)"  # a Markdown link's target: the reader sees its words, not the address
)
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*[A-Za-z]|[A-Za-z]")


def english_words(text: str, names: frozenset[str] = frozenset()) -> list[str]:
    """Latin-letter words in text that are not symbols, variable names, allowed abbreviations or `names` (the link's
    parameter names, which a note about the link quotes as they are written in it)."""
    text = _SYMBOLIC.sub(" ", text)
    words = []
    for token in re.split(r"[\s,.;:!?()\[\]/·=×+\-–—→←|\"“”'‘’*#…%~^<>]+", text):
        if not token or re.search(r"[\d_\\]", token) or token in ALLOWED_LATIN or token in names:
            continue
        for word in _LATIN_WORD.findall(token):
            if word not in ALLOWED_LATIN and word not in names and len(word) > 1:
                words.append(word)
    return words


CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")
