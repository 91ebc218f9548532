"""Mamba-2's mixer (attn_core.Mamba2Mixer), the state-space layers of Nemotron-H, Nemotron 3 Nano and Granite 4.0-H:
per head a float32 state of P x N (head width x state size) and the convolution's last K − 1 inputs, whatever the
length. Its heads and groups are the sidebar's heads and KV heads (groups of heads sharing B and C), P its head width,
N the state knob; the convolution's kernel and the scan's chunk are Nemotron-H's, said in a page's caption."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from attn_core import Mamba2Config, Mamba2Mixer
from attn_core.hf import DESIGNS
from explorer.messages import N_

from .kind import DecodeReads, Design, Kind, Twin
from .states import state_reads

if TYPE_CHECKING:
    from explorer.settings import Settings

# Nemotron-H's conv_kernel and chunk_size (NemotronHConfig's defaults)
CONV_KERNEL, CHUNK = 4, 128


class Mamba2(Kind):
    def design(self, settings: Settings) -> Design:
        s = settings
        return Design(
            self,
            Mamba2Config(
                d_model=s.d_model,
                n_heads=s.heads,
                head_dim=s.head_dim,
                state_size=s.state_dim,
                n_groups=s.groups,
                conv_kernel=CONV_KERNEL,
                chunk_size=CHUNK,
            ),
        )

    def layer_class(self) -> Any:
        return Mamba2Mixer

    def decode_reads(self, design: Design, layer: Any, x: torch.Tensor, twin: Twin) -> DecodeReads:
        return state_reads(layer, x, twin)

    def formula_bytes(self, design: Design, tokens: int, batch: int, element: int, new_tokens: int) -> tuple[int, int]:
        """attn_core.mamba's closed form: a float32 state per head and the convolution's last K − 1 inputs, read
        whole by every step."""
        config = design.config
        assert isinstance(config, Mamba2Config)
        held = DESIGNS[Mamba2Config].cache_bytes(config, tokens, batch, element)
        return held, held


MAMBA2 = Mamba2(
    key="mamba2",
    name=N_("Mamba-2 state"),
    help=N_("A state-space layer: a fixed state per head instead of a cache (Nemotron-H, Granite 4.0-H)."),
    color="#2a9d8f",
    knobs=("state_dim",),
    decodes=True,
)
