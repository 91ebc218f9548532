"""Fused q/k/v projections, as some published checkpoints store them: one weight for all three, so one matrix product
gives every head's query, key and value. Its rows come in one of two layouts:

- "stacked": [W_q; W_k; W_v]: all query heads, then all key heads, then all value heads (GPT-2's c_attn, Phi-3's
  qkv_proj).
- "grouped": for each KV group, its query heads, then its key head, then its value head (Falcon's and BLOOM's
  query_key_value: Falcon-7B's MQA is one group of 71 heads, Falcon-40B has 8 groups, BLOOM's MHA groups of one).

Either way, splitting it into q_proj, k_proj and v_proj is a reordering of blocks of head_dim rows, so a fused
checkpoint loads into the same modules and gives the same numbers (tests hold them to HF's GPT2Attention and
FalconAttention with the same weights).
"""

from __future__ import annotations

import torch

from .config import AttentionConfig
from .grouped import GroupedQueryAttention

LAYOUTS = ("stacked", "grouped")


def fused_blocks(cfg: AttentionConfig, layout: str) -> list[tuple[str, int]]:
    """(projection, head) of each block of head_dim rows of the fused weight, in order: ("q", 3) is query head 3,
    ("k", 1) key head 1. There are n_heads + 2 n_kv_heads blocks."""
    if cfg.variant == "mla":
        raise ValueError("MLA has no fused q/k/v projection: its keys and values come from a shared latent.")
    if layout == "stacked":
        return [
            (name, head)
            for name, count in (("q", cfg.n_heads), ("k", cfg.n_kv_heads), ("v", cfg.n_kv_heads))
            for head in range(count)
        ]
    if layout == "grouped":
        size = cfg.group_size
        return [
            block
            for group in range(cfg.n_kv_heads)
            for block in [*(("q", group * size + i) for i in range(size)), ("k", group), ("v", group)]
        ]
    raise ValueError(f"layout={layout!r}: choose one of {', '.join(LAYOUTS)}.")


def split_qkv(
    cfg: AttentionConfig, weight: torch.Tensor, bias: torch.Tensor | None = None, *, layout: str
) -> dict[str, torch.Tensor]:
    """A fused weight [(n_heads + 2 n_kv_heads) * head_dim, d_model] (and bias) as q_proj, k_proj and v_proj entries
    of a state dict for cfg's GroupedQueryAttention."""
    blocks = fused_blocks(cfg, layout)
    expected = (len(blocks) * cfg.head_dim, cfg.d_model)
    if tuple(weight.shape) != expected:
        raise ValueError(f"a fused q/k/v weight for this config is {list(expected)}, got {list(weight.shape)}.")
    state = {}
    for name in ("q", "k", "v"):
        rows = torch.tensor([i for i, (proj, _) in enumerate(blocks) if proj == name])  # heads in order in both layouts
        state[f"{name}_proj.weight"] = weight.reshape(len(blocks), cfg.head_dim, cfg.d_model)[rows].flatten(0, 1)
        if bias is not None:
            state[f"{name}_proj.bias"] = bias.reshape(len(blocks), cfg.head_dim)[rows].flatten()
    return state


def fuse_qkv(layer: GroupedQueryAttention, *, layout: str) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The inverse of split_qkv: the layer's q_proj, k_proj and v_proj as one fused weight (and bias, if they have
    one), rows in the given layout."""
    cfg = layer.cfg
    parts = {name: getattr(layer, f"{name}_proj") for name in ("q", "k", "v")}
    weight = torch.cat(
        [parts[name].weight.view(-1, cfg.head_dim, cfg.d_model)[head] for name, head in fused_blocks(cfg, layout)]
    )
    if parts["q"].bias is None:
        return weight, None
    return weight, torch.cat(
        [parts[name].bias.view(-1, cfg.head_dim)[head] for name, head in fused_blocks(cfg, layout)]
    )


# --- published checkpoints with a fused projection --------------------------------------------------------------
def falcon_attention_state(cfg: AttentionConfig, state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A Falcon (or BLOOM) attention block's weights (query_key_value, dense) as our state dict. cfg: Falcon's heads
    and KV heads (num_kv_heads, or 1 for multi_query), bias as the checkpoint's config says."""
    ours = split_qkv(cfg, state["query_key_value.weight"], state.get("query_key_value.bias"), layout="grouped")
    ours["o_proj.weight"] = state["dense.weight"]
    if "dense.bias" in state:
        ours["o_proj.bias"] = state["dense.bias"]
    return ours


def gpt2_attention_state(cfg: AttentionConfig, state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A GPT-2 attention block's weights (c_attn, c_proj) as our state dict. GPT-2 stores them as Conv1D, [in, out]
    (the transpose of a Linear's weight). cfg: MHA with bias=True and rope=False (GPT-2 adds learned positions to the
    input instead)."""
    ours = split_qkv(cfg, state["c_attn.weight"].T, state["c_attn.bias"], layout="stacked")
    ours["o_proj.weight"] = state["c_proj.weight"].T
    ours["o_proj.bias"] = state["c_proj.bias"]
    return ours
