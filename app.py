"""Attention Explorer: see how MHA, MQA, GQA and MLA differ, from real forward passes.

Each page draws the shared sidebar itself (explorer.state.page_settings), so it runs the same alone or here.
"""
import streamlit as st
import torch

from explorer.pages import PAGES

# One thread per tensor op: a served app runs many small ops for many sessions at once, and torch's thread pool
# spinning on 2 cores against other sessions' work made a decode trace 40x slower under load.
torch.set_num_threads(1)
st.set_page_config(page_title="Attention Explorer", page_icon=":material/grid_view:", layout="wide")
navigation = st.navigation(
    [
        st.Page(page.path, title=page.title, icon=page.icon, url_path=name, default=(name == "overview"))
        for name, page in PAGES.items()
    ]
)
navigation.run()
