"""The mapping page's parameters in the link."""

from __future__ import annotations

from attn_core import VARIANTS
from explorer.kinds.registry import KINDS
from explorer.params import Choice

MAP_VARIANT = Choice("map_variant", VARIANTS, "gqa")
MAP_STORE = Choice(
    "map_store", ("none",), "none"
)  # the real options (kv0, kv1, ... or c_kv, k_rope) depend on the view
# The designs after MLA decoding token by token: the design, how many tokens are decoded, and the token shown
MAP_DESIGN = Choice("map_design", tuple(name for name, kind in KINDS.items() if kind.decodes), "sliding")
MAP_TOKENS = Choice("map_tokens", (32, 48, 64), 48)
MAP_TOKEN = Choice("map_token", (0,), 47)  # options at bind time: 0 .. tokens - 1 (the last by default)
