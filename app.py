"""Attention Explorer: see how MHA, MQA, GQA and MLA differ, from real forward passes.

Each page draws the shared sidebar itself (explorer.state.page_settings), so it runs the same alone or here.
"""

import streamlit as st

from explorer.pages import PAGES

st.set_page_config(page_title="Attention Explorer", page_icon=":material/grid_view:", layout="wide")
navigation = st.navigation(
    [
        st.Page(page.path, title=page.title, icon=page.icon, url_path=name, default=(name == "overview"))
        for name, page in PAGES.items()
    ]
)
navigation.run()
