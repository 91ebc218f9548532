"""What a run sent to the browser, read back from Streamlit's AppTest: the charts `explorer.charts.show_chart` sent
(its live chart's JSON, with Plotly's binary arrays decoded) and the bytes a run's elements take.

The pages never call it. It lives beside the code that writes this format, so that the tests and benchmarks/app.py
read it with one copy that changes with the writer (benchmarks import nothing from tests/)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from explorer.charts import LIVE_CHART_NAME

if TYPE_CHECKING:
    from streamlit.testing.v1 import AppTest


def decode(value: Any) -> Any:
    """Plotly's JSON with its binary arrays decoded: {"dtype", "bdata", "shape"} -> list (nested for 2-D)."""
    if isinstance(value, dict):
        if set(value) >= {"dtype", "bdata"}:
            array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
            if "shape" in value:
                shape = value["shape"]
                shape = [int(s) for s in shape.split(",")] if isinstance(shape, str) else list(shape)
                array = array.reshape(shape)
            return array.tolist()
        return {key: decode(item) for key, item in value.items()}
    if isinstance(value, list):
        return [decode(item) for item in value]
    return value


def charts(at: AppTest) -> list:
    """The page's charts (explorer.charts.LIVE_CHART elements), in page order."""
    return [node for node in at.get("bidi_component") if node.proto.component_name == LIVE_CHART_NAME]


def chart_payload(chart: Any) -> dict:
    """What show_chart sent the browser for one chart: {"plotly": url, "config": {...}, "figure": {...}, ...}."""
    return json.loads(chart.proto.bytes)


def chart_specs(at: AppTest) -> list[dict]:
    """Every plotly figure on the page, as the JSON sent to the browser, arrays decoded."""
    return [decode(chart_payload(chart)["figure"]) for chart in charts(at)]


def chart_bytes(at: AppTest) -> int:
    """The bytes the page's charts send to the browser."""
    return sum(len(chart.proto.bytes) for chart in charts(at))


def all_elements(at: AppTest) -> Iterator[Any]:
    """Every element of the last run's main body and sidebar (depth first), blocks included. The pages send nothing
    to the other containers (st.toast's event block, st.bottom)."""
    stack: list = [at.sidebar, at.main]  # main first, as in the page
    while stack:
        node = stack.pop()
        yield node
        children = getattr(node, "children", None)
        if children:
            stack.extend(reversed(list(children.values())))


def payload_bytes(at: AppTest) -> tuple[int, int]:
    """(chart payload bytes, all element protobuf bytes) that this run sends to the browser."""
    elements = sum(
        node.proto.ByteSize() for node in all_elements(at) if hasattr(node, "proto") and node.proto is not None
    )
    return chart_bytes(at), elements
