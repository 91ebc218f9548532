"""The symbols and names every page uses, in the course notes' words: the variants' names, and a glossary (symbol ->
meaning) shown in the sidebar. Marked for the catalog here, translated where shown."""

from __future__ import annotations

from .i18n import N_, _
from .kinds.registry import KINDS

# The variants as the notes name them (Chinese: 多头注意力 …), with the abbreviation beside where shown.
VARIANT_NAMES = {
    "mha": N_("Multi-head attention"),
    "mqa": N_("Multi-query attention"),
    "gqa": N_("Grouped-query attention"),
    "mla": N_("Multi-head latent attention"),
}

# (symbol in LaTeX, what it is). In the order a reader meets them: the layer's sizes, then the projections, then
# MLA's latent path and its decoupled rotary key, then the cache.
SYMBOLS = (
    (r"d_{model}", N_("model width: the size of each token's hidden vector")),
    (r"h", N_("number of query heads")),
    (r"g", N_("number of KV heads (KV groups): MHA has $g = h$, MQA $g = 1$, GQA in between")),
    (r"h / g", N_("query heads per group: the heads that read one shared key/value head")),
    (r"d_h", N_("head dimension: $d_{model} / h$, the width of one head's query, key and value")),
    (r"L", N_("sequence length: tokens in the input (or already in the cache)")),
    (r"B", N_("batch: sequences processed together")),
    (r"Q, K, V", N_("queries, keys and values: the token vectors projected by $W^Q$, $W^K$, $W^V$")),
    (r"W^O", N_("output projection: joins the heads' results back to $d_{model}$")),
    (r"d_c", N_("latent width (kv_lora_rank): the size of MLA's compressed KV vector")),
    (r"c^{KV}", N_("latent KV vector: $c^{KV}_t = x_t W^{DKV}$, the only per-token content MLA caches")),
    (r"W^{DKV}", N_("down-projection: compresses a token into the latent $c^{KV}$ (low-rank joint KV compression)")),
    (r"W^{UK}, W^{UV}", N_("up-projections: rebuild each head's key and value from $c^{KV}$")),
    (r"d_h^R", N_("rotary key width (qk_rope_head_dim): the decoupled RoPE part of queries and keys")),
    (r"k^R", N_("the rotary key: carries position, shared by all heads, cached beside $c^{KV}$ (decoupled RoPE)")),
    (r"q^C, k^C", N_("the content parts of a query and a key (no position), computed through the latent")),
    (
        r"W^{UK} \to W^Q",
        N_("weight absorption: $W^{UK}$ folded into the query so that attention runs on $c^{KV}$ directly"),
    ),
    (r"2 h d_h", N_("KV cache per token and layer for MHA, in values (K and V); MQA $2 d_h$, GQA $2 g d_h$")),
    (r"d_c + d_h^R", N_("KV cache per token and layer for MLA, in values")),
)


def design_name(design: str) -> str:
    """'sliding' -> 'Sliding window' (or 滑动窗口) in this run's language: the name its kind gives it."""
    return _(KINDS[design].name)


def variant_name(variant: str) -> str:
    """'gqa' -> 'Grouped-query attention' (or 分组查询注意力) in this run's language."""
    return _(VARIANT_NAMES[variant])


def glossary_markdown() -> str:
    """The symbols as a markdown list, their maths typeset (a list, not a table: it fits the sidebar's width)."""
    return "\n".join(f"- ${symbol}$ — {_(meaning)}" for symbol, meaning in SYMBOLS)


__all__ = ["SYMBOLS", "VARIANT_NAMES", "glossary_markdown", "variant_name"]
