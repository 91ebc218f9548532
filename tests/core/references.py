"""Independent references the core is held against: textbook attention in float64, written from the equations.

Nothing here imports attn_core's maths: only the layer's weights are read (by their published names), so a mistake in
the core cannot cancel out against the same mistake here.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def linear64(module: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """x @ W^T + b in float64."""
    out = x.double() @ module.weight.detach().double().T
    if module.bias is not None:
        out = out + module.bias.detach().double()
    return out


def rms_norm64(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    x = x.double()
    return weight.detach().double() * x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)


def rope_angles64(positions: torch.Tensor, dim: int, theta: float) -> torch.Tensor:
    """[L, dim/2]: angle of pair i at position p is p / theta^(2i/dim)."""
    inv_freq = theta ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    return positions.double()[:, None] * inv_freq[None, :]


def rope_rotate_half64(x: torch.Tensor, positions: torch.Tensor, theta: float) -> torch.Tensor:
    """Llama's layout: dimension i is paired with i + dim/2; x [..., L, dim]."""
    half = x.shape[-1] // 2
    angles = rope_angles64(positions, x.shape[-1], theta)
    cos, sin = angles.cos(), angles.sin()
    first, second = x[..., :half], x[..., half:]
    return torch.cat((first * cos - second * sin, second * cos + first * sin), dim=-1)


def rope_pairs64(x: torch.Tensor, positions: torch.Tensor, theta: float) -> torch.Tensor:
    """DeepSeek's interleaved layout: dimensions (0, 1), (2, 3), ... are rotated as complex numbers, in place."""
    angles = rope_angles64(positions, x.shape[-1], theta)
    pairs = torch.view_as_complex(x.double().reshape(*x.shape[:-1], -1, 2).contiguous())
    rotated = pairs * torch.polar(torch.ones_like(angles), angles)
    return torch.view_as_real(rotated).flatten(-2)


def rope64(x, positions, theta, interleaved):
    return rope_pairs64(x, positions, theta) if interleaved else rope_rotate_half64(x, positions, theta)


def softmax_attention64(q, k, v, *, scale, allowed=None):
    """q [B, H, L, D], k [B, H, S, D], v [B, H, S, Dv] (already one key head per query head), allowed broadcastable
    to [B, H, L, S] (True = may attend). Returns out [B, H, L, Dv] and weights [B, H, L, S]."""
    scores = (q.double() @ k.double().transpose(-1, -2)) * scale
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v.double(), weights


def end_aligned_causal(q_len: int, k_len: int) -> torch.Tensor:
    """[L, S]: query i (the (S-L+i)-th token) sees keys 0..S-L+i."""
    query_pos = torch.arange(k_len - q_len, k_len)[:, None]
    return torch.arange(k_len)[None, :] <= query_pos


def textbook_grouped(layer, x, *, start=0, past=None, kv_input=None, key_padding_mask=None, causal=True):
    """MHA/MQA/GQA from the equations, float64. past: (k, v) already held, [B, G, P, D] rotated; returns
    (out [B, L, d_model], weights [B, H, L, S], (k, v) held after this call)."""
    cfg = layer.cfg
    b, l, _ = x.shape
    h, g, d = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
    q = linear64(layer.q_proj, x).reshape(b, l, h, d).transpose(1, 2)
    source = x if kv_input is None else kv_input
    s_new = source.shape[1]
    k = linear64(layer.k_proj, source).reshape(b, s_new, g, d).transpose(1, 2)
    v = linear64(layer.v_proj, source).reshape(b, s_new, g, d).transpose(1, 2)
    if kv_input is None and cfg.rope:
        positions = torch.arange(start, start + l)
        q = rope64(q, positions, cfg.rope_theta, cfg.rope_interleave)
        k = rope64(k, positions, cfg.rope_theta, cfg.rope_interleave)
    if past is not None:
        k, v = torch.cat((past[0], k), dim=2), torch.cat((past[1], v), dim=2)
    held = (k, v)
    k_rep, v_rep = k.repeat_interleave(h // g, dim=1), v.repeat_interleave(h // g, dim=1)
    allowed = _allowed(l, k.shape[2], causal and kv_input is None, key_padding_mask)
    out, weights = softmax_attention64(q, k_rep, v_rep, scale=d**-0.5, allowed=allowed)
    out = out.transpose(1, 2).reshape(b, l, h * d)
    return linear64(layer.o_proj, out), weights, held


def textbook_mla(layer, x, *, start=0, past=None, key_padding_mask=None, causal=True):
    """MLA from DeepSeek-V2's equations, float64, naive (per-head keys and values). past: (c_kv, k_rope) held,
    [B, P, d_c] and [B, P, d_h^R]. Returns (out, weights, (c_kv, k_rope) held after this call)."""
    cfg = layer.cfg
    b, l, _ = x.shape
    h, nope, rope_d, dv, dc = cfg.n_heads, cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.v_head_dim, cfg.kv_lora_rank
    if cfg.q_lora_rank is None:
        q = linear64(layer.q_proj, x)
    else:
        q = linear64(layer.q_b_proj, rms_norm64(linear64(layer.q_a_proj, x), layer.q_a_layernorm.weight, cfg.norm_eps))
    q = q.reshape(b, l, h, nope + rope_d).transpose(1, 2)
    q_nope, q_rope = q[..., :nope], q[..., nope:]
    compressed = linear64(layer.kv_a_proj_with_mqa, x)
    c_kv = rms_norm64(compressed[..., :dc], layer.kv_a_layernorm.weight, cfg.norm_eps)  # [B, L, d_c]
    k_rope = compressed[..., dc:]  # [B, L, d_h^R]
    if cfg.rope:
        positions = torch.arange(start, start + l)
        q_rope = rope64(q_rope, positions, cfg.rope_theta, cfg.rope_interleave)
        k_rope = rope64(k_rope, positions, cfg.rope_theta, cfg.rope_interleave)
    if past is not None:
        c_kv, k_rope = torch.cat((past[0], c_kv), dim=1), torch.cat((past[1], k_rope), dim=1)
    s = c_kv.shape[1]
    kv = linear64(layer.kv_b_proj, c_kv).reshape(b, s, h, nope + dv).transpose(1, 2)
    keys = torch.cat((kv[..., :nope], k_rope[:, None].expand(b, h, s, rope_d)), dim=-1)
    allowed = _allowed(l, s, causal, key_padding_mask)
    out, weights = softmax_attention64(
        torch.cat((q_nope, q_rope), dim=-1), keys, kv[..., nope:], scale=(nope + rope_d) ** -0.5, allowed=allowed
    )
    out = out.transpose(1, 2).reshape(b, l, h * dv)
    return linear64(layer.o_proj, out), weights, (c_kv, k_rope)


def textbook(layer, x, **kwargs):
    return (textbook_mla if layer.cfg.variant == "mla" else textbook_grouped)(layer, x, **kwargs)


def _allowed(q_len, k_len, causal, key_padding_mask):
    allowed = torch.ones(1, 1, q_len, k_len, dtype=torch.bool)
    if causal:
        allowed = allowed & end_aligned_causal(q_len, k_len)
    if key_padding_mask is not None:
        allowed = allowed & key_padding_mask.bool()[:, None, None, :]
    return allowed


def sdpa_grouped_repeated_kv(layer, x):
    """GQA the plain torch way, float32: project, rotate (rotate-half), repeat KV heads, causal SDPA."""
    cfg = layer.cfg
    b, l, _ = x.shape
    h, g, d = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
    q = layer.q_proj(x).view(b, l, h, d).transpose(1, 2)
    k = layer.k_proj(x).view(b, l, g, d).transpose(1, 2)
    v = layer.v_proj(x).view(b, l, g, d).transpose(1, 2)
    if cfg.rope:
        positions = torch.arange(l)
        q = rope_rotate_half64(q, positions, cfg.rope_theta).float()
        k = rope_rotate_half64(k, positions, cfg.rope_theta).float()
    k, v = k.repeat_interleave(h // g, dim=1), v.repeat_interleave(h // g, dim=1)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return layer.o_proj(out.transpose(1, 2).reshape(b, l, h * d))
