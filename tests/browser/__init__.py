"""End-to-end: the app served by `streamlit run`, driven in Debian's chromium through Playwright."""
