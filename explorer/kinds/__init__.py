"""The kinds of layer the app shows after the four variants, one module each, mirroring attn_core (a kind is a room on
each side: its layer in attn_core, everything the app knows of it here). Torch only, no language, no figures.

    kind.py        Kind (what every kind offers a page), Design (a kind at given settings), Twin (a layer's calls
                   again on the meta device in the storage dtype), DecodeReads (a decode's columns and bytes)
    grouped.py     the grouped layer with a window and kept first tokens or learned sinks ("sliding")
    dsa.py         DeepSeek-V3.2's sparse attention: MLA reading the top k an indexer picks ("dsa")
    compressed.py  DeepSeek-V4's compressed attention: an entry per m tokens and a window ("compressed")
    linear.py      Gated DeltaNet's fixed state ("linear")
    quantised.py   the grouped layer with KIVI's quantised cache ("quantised")
    shared_topk.py GLM-5's shared layers: MLA reading the full DSA layer's top-k, built as the pair ("shared_topk")
    mamba2.py      Mamba-2's mixer: a P x N state per head and a conv tail (Nemotron-H, Granite 4.0-H: "mamba2")
    lightning.py   MiniMax's lightning attention: a decayed D x D state per head ("lightning")
    states.py      what the state kinds share: a decode's reads, one column per head's state matrix
    chunked.py     Llama 4's chunked local attention: a query reads its own chunk, the cache holds one ("chunked")
    shared.py      Gemma 3n's KV sharing: a consumer layer reading its producer's cache, holding none ("shared")
    registry.py    KINDS, in the sidebar's order, and design(settings, name) / chosen(settings)

A page asks a kind (through KINDS[name] or a Design's .kind) and never tests the core's classes itself.
"""
