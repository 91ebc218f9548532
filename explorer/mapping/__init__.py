"""The head -> KV mapping page's side of the app: pages/mapping.py imports the modules it reads.

link      the page's parameters in the link
computed  the cached probes (explorer.probes.mapping) a rerun reads back
frames    which animation frame and which store, and their labels
geometry  where the figure's bars go: the KV row and the query row
hover     the figure's words: hover HTML, the cache's bytes, each frame's title
figures   the animated figure (one frame per step, MHA -> MLA): its traces and layout
tables    the page's tables and CSV rows
gif       the morph as an animated GIF for slides (the lesson's download)
fused     one fused weight for q, k and v
reads     the designs after MLA decoding token by token: what each token reads (its kind's decode_reads, explorer/kinds/), the
          animated figure, its caption, CSV rows and GIF
"""

# The modules another page (the lesson) may import: this page's public face; the others are its own helpers.
PUBLIC = ("link", "computed", "frames", "figures", "tables", "gif")
