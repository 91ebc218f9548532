"""The axes page's probes (explorer.probes.axes), cached for the server by their arguments: numbers only, worded
where shown. Meta-device passes, too light to take turns with the heavy probes."""

from __future__ import annotations

from explorer.probes.axes import custom_curves, published_curves
from explorer.work import cached_probe

cached_published = cached_probe(published_curves, max_entries=16, takes_turns=False)
cached_custom = cached_probe(custom_curves, max_entries=64, takes_turns=False)
