"""One Chinese term per idea (explorer/locales/TERMS.md): no translation uses a spelling the table rules out, as a
class met "Pareto 前沿" and "帕累托前沿" in one step, and "KV 头", "K/V 头" and "键值头" for one thing."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.locales import read_catalog

TERMS = Path(__file__).resolve().parents[2] / "explorer" / "locales" / "TERMS.md"
# spelling ruled out -> the table's term
RULED_OUT = {
    "K/V 头": "KV 头",
    "键值头": "KV 头",
    "Pareto 前沿": "帕累托前沿",
    "平均池化": "均值池化",
    "少 {ratio} 倍": "1/n",
}


def translations() -> list[str]:
    out = []
    for message in read_catalog():
        if message.id:
            out += list(message.string) if isinstance(message.string, tuple) else [message.string]
    return out


@pytest.mark.parametrize(("avoided", "term"), RULED_OUT.items())
def test_no_translation_uses_a_ruled_out_spelling(avoided, term):
    assert term in TERMS.read_text(), f"TERMS.md names {term!r}"
    assert [t for t in translations() if avoided in t] == []
