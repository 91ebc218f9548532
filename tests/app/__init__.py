"""The app shell and every registered page, run through Streamlit's AppTest."""
