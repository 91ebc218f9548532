"""Text shown exactly as it is: a link, a decode loop's log, a model's answer, a server's error. Monospace, wrapped (no
sideways scroll on a projector or a phone), with a copy button that is always visible (a phone has no hover).

st.code draws text so too, but its first use on a page makes the browser fetch and run Streamlit's syntax highlighter
(a 1.5 MB script) to colour text that has no syntax: on a new visit that cost 0.3-0.6 s of the browser's one thread
before the page's first chart (benchmarks/MEASUREMENTS.md), and the share box puts a link on every page."""

from __future__ import annotations

import html
import json
import re

import streamlit as st

from .i18n import _

# Wires the button beside it. The clipboard API exists only on https and localhost; a classroom's server reached at a
# LAN address over http has none, so the text is then selected and copied the old way (or left selected for Ctrl+C).
_COPY_SCRIPT = """(() => {
  const box = document.currentScript.parentElement;
  const button = box.querySelector("button"), text = box.querySelector("pre");
  const said = JSON.parse(button.dataset.said);
  button.addEventListener("click", async () => {
    let copied = false;
    try { await navigator.clipboard.writeText(text.textContent); copied = true; } catch (error) {}
    if (!copied) {
      const range = document.createRange(); range.selectNodeContents(text);
      const selection = window.getSelection(); selection.removeAllRanges(); selection.addRange(range);
      try { copied = document.execCommand("copy"); } catch (error) {}
    }
    button.textContent = copied ? said.copied : said.selected;
    setTimeout(() => { button.textContent = said.copy; }, 2000);
  });
})();"""

# The shown text inside a show_verbatim element's HTML (what tests read back, and leave out of translation checks)
SHOWN_TEXT = re.compile(r'<pre class="verbatim-text">(.*?)</pre>', re.S)


def show_verbatim(text: str) -> None:
    """text in a monospace block with a copy button."""
    said = {"copy": _("Copy"), "copied": _("Copied"), "selected": _("Selected: press Ctrl+C to copy")}
    st.html(
        '<div class="verbatim">'
        f'<pre class="verbatim-text">{html.escape(text)}</pre>'
        f'<button type="button" class="verbatim-copy" data-said="{html.escape(json.dumps(said, ensure_ascii=False))}">'
        f"{html.escape(said['copy'])}</button>"
        f"<script>{_COPY_SCRIPT}</script></div>",
        unsafe_allow_javascript=True,
    )


def shown_text(body: str) -> str | None:
    """The text a show_verbatim element's HTML body shows (None for other HTML): what a reader reads and copies."""
    found = SHOWN_TEXT.search(body)
    return html.unescape(found.group(1)) if found else None
