"""The KV cache page's side of the app; pages/kv_cache.py imports the modules it reads (and the probes' bounds from
explorer.probes.kv_cache).

link        the page's parameters in the link (and the what-if's group counts for a model)
computed    the cached probes (explorer.probes.kv_cache) a rerun reads back: decode traces, whole-model rows
text        the page's words: a cache's shown name, a whole-model row's name, its tensors' names, the presets' notes
tables      each cache at one step, the whole model's ways of caching, what fits in a budget, the step charts' CSV
figures     bytes held step by step, the difference from a full recompute, whole models against a budget
gif         the cache growing token by token as an animated GIF for slides (the lesson's download)
"""

# The modules another page (the lesson) may import: this page's public face; the others are its own helpers.
PUBLIC = ("link", "computed", "text", "tables", "figures", "gif")
