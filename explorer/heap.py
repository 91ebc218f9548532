"""Keep Python's cyclic garbage collector off the modules the app imported.

Streamlit runs a full collection after every script run (runner.postScriptGC), and Python runs one now and then on
its own. Each walks every object the process tracks: with torch, plotly and pandas imported that is some 250,000
objects, holding the GIL the whole time (benchmarks/MEASUREMENTS.md), so the server sends nothing meanwhile: the rest of a page, its "finished" and the next key press all waited behind it. Imported modules
live as long as the process, so they are moved out of the collector's sight (gc.freeze) once a run has imported
new ones; what a session creates afterwards is collected as before.
"""

from __future__ import annotations

import gc
import sys

_modules_frozen = 0  # len(sys.modules) at the last freeze


def freeze_imports() -> None:
    """Call at the end of a script run: if this run imported modules, freeze everything alive now (cheap, once)."""
    global _modules_frozen
    if len(sys.modules) > _modules_frozen:
        gc.freeze()
        _modules_frozen = len(sys.modules)
