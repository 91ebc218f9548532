"""The lab's parameters in the link: a shared link reopens the same view, answers included."""

from __future__ import annotations

from explorer.params import Choice, Flag, Text
from explorer.probes.lab import LAB_POINTS

CONTEXT = Choice("lab_context", (512, 1024, 2048, 4096, 8192), 8192)
# MQA fitted by default: healed live for a minute it answers in words ("\nA:" before); MQA mean-pooled answered 24
# line breaks after the same minute
MODEL = Choice("lab_model", tuple(point.key for point in LAB_POINTS if point.key != "original"), "mqa-pca")
PROMPT = Text("lab_prompt", "What is a Python list comprehension?", 300)
TEXT = Text(
    "lab_text",
    "The cache holds the keys and values of every token seen so far, so decoding never recomputes them.",
    4000,
)
ANSWER = Flag("lab_answer", False)
MEASURE = Flag("lab_measure", False)
