"""The heatmaps page's parameters in the link: each a control on the page, each parsed from any text."""

from __future__ import annotations

from attn_core import VARIANTS
from explorer.kinds.registry import KINDS
from explorer.messages import N_
from explorer.params import Choice, Flag, Text
from explorer.probes.heatmaps import MAX_TEXT_CHARS

DEFAULT_TEXT = "the cat sat on the mat and the dog sat on the log"
SCALES = ("0.5", "1", "2", "4")


VARIANT = Choice("hm_variant", VARIANTS, "gqa")
GROUP = Choice("hm_group", ("all",), "all")  # options at bind time: "all", 0 .. n_kv_heads - 1
FIRST_HEAD = Choice("hm_from", (0,), 0)  # first head of the page of heads drawn, when there are more than MAX_PANELS
HEAD = Choice("hm_head", (0,), 0)  # the head opened up in "inside one head" and compared across variants
INPUT = Choice("hm_input", ("random", "text"), "random")
TEXT = Text("hm_text", DEFAULT_TEXT, MAX_TEXT_CHARS)
TOKENS = Choice("hm_tokens", ("words", "chars"), "words")
SCALE = Choice("hm_scale", SCALES, "2")
CAUSAL = Flag("hm_causal", True)
ROPE = Flag("hm_rope", True)
POOL = Choice("hm_pool", ("mean", "max"), "mean")
# The designs after MLA (section 5): the design drawn, and a sliding layer's sinks (the sidebar's kept first tokens,
# StreamingLLM's, or a learned sink logit per head, gpt-oss's)
DESIGN = Choice("hm_design", tuple(name for name, kind in KINDS.items() if kind.maps), "sliding")
SINK = Choice("hm_sink", ("kept", "learned"), "kept")

# The options' names in the notes' terms (translated where shown), made once here rather than on every page run.
INPUT_KINDS = {"random": N_("Random vectors"), "text": N_("Your text")}
TOKEN_MODES = {"words": N_("Words"), "chars": N_("Characters")}
POOLS = {"mean": N_("mean"), "max": N_("max")}
SINK_KINDS = {"kept": N_("kept first tokens"), "learned": N_("learned (gpt-oss)")}
