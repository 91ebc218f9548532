"""The KV cache page's parameters in the link: each a control on the page, each parsed from any text."""

from __future__ import annotations

from attn_core import FORMER_NAMES, PRESETS, STORAGES, kv_head_counts
from explorer.params import Choice, Flag, IntRange
from explorer.probes.kv_cache import MAX_PROMPT_LEN, MAX_STEPS

PROMPT = IntRange("kv_prompt", 1, MAX_PROMPT_LEN, 12)
STEPS = IntRange("kv_steps", 1, MAX_STEPS, 40)
STEP = IntRange("kv_step", 0, MAX_STEPS, STEPS.default)  # by default the last step generated
REPEAT = Flag("kv_repeat", False)
NOTES_MODEL = "Llama 2 7B"  # the course notes' example, and the page's first model
MODEL = Choice("kv_model", tuple(PRESETS), NOTES_MODEL, aliases=tuple(FORMER_NAMES.items()))  # old links' names
GROUPS = Choice("kv_groups", tuple(range(1, 129)), 8)  # narrowed to the divisors of the model's head count
LATENT = Choice("kv_latent", (64, 128, 256, 384, 512, 768, 1024, 1536, 2048), 512)
ROPE = Choice("kv_rope", (16, 32, 64, 128, 256), 64)
GPU_GIB = Choice("kv_gpu_gib", (16, 24, 32, 40, 48, 64, 80, 96, 128, 141, 192), 80)
GPUS = Choice("kv_gpus", (1, 2, 4, 8, 16, 32, 64), 1)
STORAGE = Choice("kv_storage", STORAGES, "reference")  # the published models' section; old links: as HF holds it


def group_options(n_heads: int) -> tuple[int, ...]:
    """KV group counts for a what-if: divisors of the head count strictly between MQA (1) and MHA (n_heads)."""
    counts = kv_head_counts(n_heads)
    return tuple(counts[1:-1]) or tuple(counts)


def preferred_groups(preset_name: str) -> int:
    """The what-if's starting group count: the model's own KV heads if it is GQA, else the divisor nearest 8."""
    attention = PRESETS[preset_name].attention
    options = group_options(attention.n_heads)
    if attention.variant == "gqa" and attention.n_kv_heads in options:
        return attention.n_kv_heads
    return min(options, key=lambda g: (max(g, 8) / min(g, 8), g))
