"""Both chapters' views, by step key: the first chapter's (explorer/lesson/views.py) and the second's, after MLA
(explorer/lesson/after_mla_views.py, and its two steps on the layers axis in explorer/lesson/layers_axis.py). The page and the tests look a step's chart and numbers up here."""

from __future__ import annotations

from collections.abc import Callable

from . import after_mla_views, layers_axis, views

# Each step's view: called with the language (its words are in it), and the step's control if it has one.
STEP_VIEWS: dict[str, Callable[..., views.StepView | None]] = (
    views.STEP_VIEWS | after_mla_views.VIEWS | layers_axis.VIEWS
)
# The numbers a step's text, question and answer quote ({placeholders}), for the steps that quote any.
STEP_NUMBERS: dict[str, Callable[[str], dict[str, object]]] = (
    views.STEP_NUMBERS | after_mla_views.NUMBERS | layers_axis.NUMBERS
)
