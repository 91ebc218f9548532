"""Every page's first import of ours: a page run by Streamlit's old pages/ folder mode leaves it before anything
heavy is imported.

A fresh server sees the pages/ folder beside app.py and, until some run has called st.navigation, serves its first
link (/heatmaps, say) by running pages/heatmaps.py directly, under a menu of file names ("app", "kv cache"). Leaving
that mode and rerunning sends the same link through app.py's menu. Done here, on import, rather than in
page_settings: there it came after torch's import, all the while showing the file names (benchmarks/MEASUREMENTS.md).
"""

from explorer.navigation import leave_pages_folder_mode

leave_pages_folder_mode()
