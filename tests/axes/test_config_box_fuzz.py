"""The axes page's config box takes anything a reader pastes: random JSON, truncated files, huge numbers, wrong types
in every field. custom_curves (what the page calls) answers each with curves or a problem the page words, never an
exception: 0 tracebacks."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from attn_core import PUBLISHED
from explorer.probes.axes import CustomResult, custom_curves

pytestmark = pytest.mark.slow  # hundreds of configs described along the grid

PROFILE = hypothesis_settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOKENS = (1024, 131072, 1 << 20)  # the grid's ends and a middle: what a rerun computes, fewer lengths

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=10), inner, max_size=6),
    max_leaves=25,
)
huge_or_wrong = st.one_of(
    st.integers(min_value=-(10**40), max_value=10**40),
    st.sampled_from([0, -1, 2**31, 2**63, 10**12, 10**100, 1.5, float("inf"), float("nan"), True, "8", [8], {}]),
    json_values,
)


def answered(result: CustomResult) -> bool:
    """Exactly one of the two: a drawing, or a problem to word."""
    return (result.curves is None) != (result.problem is None)


@PROFILE
@given(json_values)
def test_any_json_value_is_answered_without_an_exception(value):
    assert answered(custom_curves(json.dumps(value), tokens=TOKENS))


@PROFILE
@given(st.sampled_from(list(PUBLISHED)), st.data())
def test_a_published_config_cut_anywhere_is_answered(name, data):
    text = json.dumps(PUBLISHED[name], indent=1)
    end = data.draw(st.integers(min_value=0, max_value=len(text)))
    result = custom_curves(text[:end], tokens=TOKENS)
    assert answered(result)
    if end < len(text.rstrip()):
        assert result.problem is not None
        assert result.problem.kind in ("empty", "not_json")


@PROFILE
@given(st.sampled_from(list(PUBLISHED)), st.data(), huge_or_wrong)
def test_a_field_with_a_huge_number_or_a_wrong_type_is_answered(name, data, value):
    config = json.loads(json.dumps(PUBLISHED[name]))
    target = config.get("text_config", config)
    field = data.draw(st.sampled_from(sorted(target)))
    target[field] = value
    assert answered(custom_curves(json.dumps(config), tokens=TOKENS))


@PROFILE
@given(st.sampled_from(list(PUBLISHED)), st.data())
def test_a_config_missing_a_field_is_answered(name, data):
    config = json.loads(json.dumps(PUBLISHED[name]))
    target = config.get("text_config", config)
    del target[data.draw(st.sampled_from(sorted(target)))]
    assert answered(custom_curves(json.dumps(config), tokens=TOKENS))


@PROFILE
@given(st.text(max_size=300))
def test_any_text_is_answered(text):
    assert answered(custom_curves(text, tokens=TOKENS))


def test_a_failure_of_the_core_is_a_problem_with_its_error_not_a_traceback():
    config = json.loads(json.dumps(PUBLISHED["Llama 3 8B"])) | {"hidden_size": 2**31}
    result = custom_curves(json.dumps(config), tokens=TOKENS)
    assert result.problem is not None
    assert result.problem.kind in ("field", "invalid", "core_failed")


def test_the_core_refuses_a_width_too_large_to_build_naming_the_field():
    config = json.loads(json.dumps(PUBLISHED["Llama 3 8B"])) | {"hidden_size": 2**31}
    problem = custom_curves(json.dumps(config), tokens=TOKENS).problem
    assert problem.kind == "field"
    assert (problem.values["field"], problem.values["value"], problem.values["need"]) == (
        "hidden_size",
        "2147483648",
        "whole",
    )
