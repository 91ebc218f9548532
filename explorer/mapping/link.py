"""The mapping page's parameters in the link."""

from __future__ import annotations

from attn_core import VARIANTS
from explorer.params import Choice

MAP_VARIANT = Choice("map_variant", VARIANTS, "gqa")
MAP_STORE = Choice(
    "map_store", ("none",), "none"
)  # the real options (kv0, kv1, ... or c_kv, k_rope) depend on the view
