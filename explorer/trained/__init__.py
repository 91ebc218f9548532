"""The trained model page's side of the app; pages/trained.py imports the modules it reads.

link        the page's parameters in the link, its default text and prompt (in the page's language) and its bounds
computed    the cached probes (explorer.probes.trained) a rerun reads back: attention on a text, a written answer
text        the page's words: findings computed from what is shown, the tokens as chips
figures     every layer's heads at a glance, one head, a KV group's heads, where heads look, the cache as it writes
csv_export  each chart's numbers as CSV
"""

# The modules another page (the lesson) may import: this page's public face; the others are its own helpers.
PUBLIC = ("link", "computed", "text", "figures", "csv_export")
