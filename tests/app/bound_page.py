"""A small page for the tests of explorer.link.bound: one view control of each kind, bound to the link.

Shaped like a real page: shared settings first, then link-backed controls whose valid values depend on them. It
prints each value as a caption ("t_mode = ...") so a test can read what the page ended up using.
"""

import streamlit as st

from explorer.link import bound
from explorer.state import page_settings
from tests.app.bound_params import HEAD, MODE, SHOW_MASK, VARIANT

settings = page_settings("bound_page")
st.title("bound() test page")

mode = bound(MODE, lambda key: st.radio("Mode", MODE.options, key=key, horizontal=True))
variant = bound(VARIANT, lambda key: st.selectbox("Variant", settings.variants, key=key), settings.variants)
show_mask = bound(SHOW_MASK, lambda key: st.toggle("Show the causal mask", key=key))
last_head = settings.heads - 1
head = bound(
    HEAD, lambda key: st.number_input("Head", min_value=0, max_value=last_head, step=1, key=key), (0, last_head)
)

for name, value in (("t_mode", mode), ("t_variant", variant), ("t_mask", show_mask), ("t_head", head)):
    st.caption(f"{name} = {value}")
