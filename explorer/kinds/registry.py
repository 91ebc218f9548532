"""KINDS: every kind of layer the sidebar offers after the four variants, in the order it lists them, by its value in
a link; a new kind is a module of explorer/kinds/ and its line here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .chunked import CHUNKED
from .compressed import COMPRESSED
from .dsa import DSA
from .grouped import SLIDING
from .kind import Design, Kind
from .lightning import LIGHTNING
from .linear import LINEAR
from .mamba2 import MAMBA2
from .quantised import QUANTISED
from .shared import SHARED
from .shared_topk import SHARED_TOPK

if TYPE_CHECKING:
    from explorer.settings import Settings

KINDS: dict[str, Kind] = {
    kind.key: kind
    for kind in (
        SLIDING,
        DSA,
        COMPRESSED,
        LINEAR,
        QUANTISED,
        CHUNKED,  # Llama 4's chunks
        SHARED,  # Gemma 3n's shared layers
        SHARED_TOPK,  # GLM-5's shared top-k
        MAMBA2,  # Mamba-2's state
        LIGHTNING,  # MiniMax's state
    )
}


def design(settings: Settings, name: str) -> Design:
    """The kind `name` (a key of KINDS) at these settings: ValueError for an unknown name."""
    if name not in KINDS:
        raise ValueError(f"design={name!r}: choose one of {', '.join(KINDS)}.")
    return KINDS[name].design(settings)


def chosen(settings: Settings) -> dict[str, Design]:
    """The designs the settings choose, in their usual order."""
    return {name: design(settings, name) for name in settings.designs}
