"""The axes page's parameters in the link: the length the page reads at, held or read, the storage (as HF's modules
hold the caches, or as served), and a pasted config.json."""

from __future__ import annotations

from attn_core import STORAGES
from explorer.params import Choice, Text
from explorer.probes.axes import MAX_CONFIG_CHARS, TOKEN_GRID

TOKENS = Choice("ax_tokens", TOKEN_GRID, 131072)
MEASURE = Choice("ax_measure", ("held", "read"), "held")
STORAGE = Choice("ax_storage", STORAGES, "reference")  # old links, without it, open as HF's modules hold the caches
# The pasted config travels compressed (explorer.params.compact_text); a longer paste is refused whole, not cut
CONFIG = Text("ax_config", "", MAX_CONFIG_CHARS)
