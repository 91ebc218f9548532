"""The axes page's side of the app, by job (pages/axes.py imports the modules; the probe is explorer.probes.axes).

link      the page's parameters in the link: the length it reads at, held or read, a pasted config.json
computed  the cached probes (explorer.probes.axes): published models' curves, a pasted config's
text      the words: layer kinds' names, what is wrong with a pasted config, the captions the curves say
tables    every layer kind at the chosen length; the four axes' cuts as rows
figures   caches against context (log-log), and the four axes' cuts at one length

No csv_export: each figure function returns its own CSV rows.
"""

# The modules another page (the lesson) may import: this page's public face; the others are its own helpers.
PUBLIC = ("link", "computed", "text", "tables", "figures")
