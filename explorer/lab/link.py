"""The lab's parameters in the link: a shared link reopens the same view, answers included."""

from __future__ import annotations

from explorer.params import Choice, Flag, Text
from explorer.probes.lab import LAB_POINTS
from explorer.probes.lab_axes import PASSAGES

CONTEXT = Choice("lab_context", (512, 1024, 2048, 4096, 8192), 8192)
# MLA d_c 96 by default: the same 15 KiB a token as MQA, and the conversion a minute's live heal brings to sentences.
# Healed live for 60 s on the loaded 2-core machine, MQA fitted went 137.50 -> 51.61..67.63 (10-31 steps) and wrote
# "The following is a list of code that is a list of a list of code..."; MLA d_c 96 went 50.58 -> 36.60 (7 steps)
# and wrote "The list comprehension is a Python list comprehension." (the original: 17.54).
MODEL = Choice("lab_model", tuple(point.key for point in LAB_POINTS if point.key != "original"), "mla-96-32")
PROMPT = Text("lab_prompt", "What is a Python list comprehension?", 300)
TEXT = Text(
    "lab_text",
    "The cache holds the keys and values of every token seen so far, so decoding never recomputes them.",
    4000,
)
ANSWER = Flag("lab_answer", False)
MEASURE = Flag("lab_measure", False)

# The trade-off across every axis (explorer.lab.axes_page): the context its caches are counted at (the stored tables'
# contexts) and the budget, as a share of the original's cache in percent.
AXES_CONTEXT = Choice("lab_axes_context", (512, 1024, 2048, 4096, 8192, 32768), 8192)
AXES_BUDGET = Choice("lab_budget", (2, 5, 10, 25, 50), 25)  # the slider grows to the right
PASSAGE = Choice("lab_passage", PASSAGES, PASSAGES[0])
CONTINUE = Flag("lab_continue", False)


def heal_button_key(point: str) -> str:
    """The key of the button that heals `point` live: the page has one per healable point, found by it in tests."""
    return f"lab_heal_{point}"
