"""The masks page's parameters in the link."""

from __future__ import annotations

from attn_core import VARIANTS
from explorer.params import Choice, Flag, IntRange
from explorer.probes.masks import MAX_TOKENS

VARIANT = Choice("mk_variant", VARIANTS, VARIANTS[0])  # options at bind time: the sidebar's variants (first = default)
HEAD = Choice("mk_head", (0,), 0)  # options at bind time: 0 .. heads - 1
LONG = IntRange("mk_long", 2, MAX_TOKENS, 12)
SHORT = IntRange("mk_short", 1, MAX_TOKENS - 1, 7)  # bound to 1 .. long - 1
CAUSAL = Flag("mk_causal", True)
PREFILL = IntRange("mk_prefill", 1, MAX_TOKENS - 1, 8)
CHUNK = IntRange("mk_chunk", 1, MAX_TOKENS - 1, 4)  # bound to 1 .. MAX_TOKENS - prefill
QUERIES = IntRange("mk_queries", 1, MAX_TOKENS, 6)
MEMORY = IntRange("mk_memory", 1, MAX_TOKENS, 10)
