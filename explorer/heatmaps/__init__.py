"""The attention heatmaps page's side of the app; pages/heatmaps.py imports the modules it reads.

link        the page's parameters in the link
computed    which heads a pass computes, the window of tokens, and the cached passes (explorer.probes.heatmaps; the
            designs after MLA: their kinds' attention_map, explorer/kinds/)
panels      heatmap panels: one pooled matrix, a grid of them as one figure (explorer/grid.py), their CSV numbers
figures     the page's charts (the four sections and the designs after MLA), cached by settings and language, with
            the facts their captions state
tables      what the decode step read from the cache, and how alike the variants' maps are
"""

# The modules another page (the lesson) may import: this page's public face; the others are its own helpers.
PUBLIC = ("link", "computed", "figures", "tables")
