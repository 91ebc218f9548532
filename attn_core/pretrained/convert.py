"""Re-express a trained model's attention as another variant, without training: MHA, fewer KV heads, or MLA.

    convert_attention(lm, "mha")                                      # exact: each KV head repeated
    convert_attention(lm, "gqa", n_kv_heads=1, method="mean")         # MQA, mean-pooled KV heads (the GQA paper)
    convert_attention(lm, "gqa", n_kv_heads=1, method="pca", calibration=cal)   # MQA, fitted to activations
    model, report = convert_attention(lm, "mla", kv_lora_rank=192, qk_rope_head_dim=32, calibration=cal)

Every conversion returns a model (with a report of what it kept) whose attention layers are attn_core modules of that variant with their own cache
(GroupedQueryAttention, or MultiHeadLatentAttention with its absorbed decode and [c_kv | k_rope] cache); embeddings,
norms and MLPs are shared with the source model.

The two facts the data-aware conversions rest on:
- RoPE in the rotate-half layout rotates each pair of dims (i, i + D/2) by position x frequency i: a complex number
  times e^{i·angle}. Any complex scalar per frequency commutes with that rotation, so a key's frequency-i pair may be
  replaced by a complex mixture of several heads' pairs, and the query absorbs the conjugate coefficient, with
  positions still exact. Mixing two different frequencies does not commute: that is why a shared rotary key (MQA's,
  or MLA's k_rope) can stand for several KV heads only through one complex direction per frequency.
- Everything fitted here is a principal-component (least-squares) reduction in the space of the layer's activations:
  covariances of the attention inputs on a calibration text (`calibrate`), never the evaluation text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch

from ..config import AttentionConfig
from ..grouped import GroupedQueryAttention
from .model import PretrainedLM

CONVERSIONS = ("mha", "gqa", "mla")
KV_HEAD_METHODS = ("mean", "pca")
# MLA's kv_a_layernorm divides each token's latent by its RMS, a per-token scale of keys and values that the source
# model was never trained with. Converted layers keep DeepSeek's module but set the norm's epsilon far above the
# latent's mean square (which conversion scales to about 1), so the norm is a constant scale: relative deviation
# ms / (2 * eps), under 1e-6 for tokens whose latent mean square stays below 100.
LATENT_NORM_EPS = 1.0e8


@dataclass
class Calibration:
    """Second moments E[x xᵀ] of every layer's attention input (after its RMSNorm), float64, on calibration text."""

    covariances: list[torch.Tensor]
    tokens: int


@dataclass
class ConversionReport:
    """What a conversion kept, per layer: the fraction of the calibration activations' energy (sum of squares)
    that survived each reduction. 1.0 where a step is exact."""

    variant: str
    options: dict[str, Any]
    kept: dict[str, list[float]] = field(default_factory=dict)

    def mean_kept(self) -> dict[str, float]:
        return {name: sum(values) / len(values) for name, values in self.kept.items()}


class Conversion(NamedTuple):
    """A converted model and what its conversion kept."""

    model: PretrainedLM
    report: ConversionReport


@torch.inference_mode()
def calibrate(lm: PretrainedLM, text: str, *, max_tokens: int = 1024, window: int = 512) -> Calibration:
    """Run lm on (at most max_tokens of) text, in windows, and keep each layer's E[x xᵀ] of its attention input."""
    ids = lm.encode(text)[:max_tokens]
    if len(ids) < 2:
        raise ValueError("calibration needs a text of at least two tokens.")
    d_model = lm.config.d_model
    sums = [torch.zeros(d_model, d_model, dtype=torch.float64) for _ in lm.decoder_layers]
    handles = []
    for index, layer in enumerate(lm.decoder_layers):

        def record(_module: torch.nn.Module, args: tuple[Any, ...], index: int = index) -> None:
            x = args[0].reshape(-1, d_model).double()
            sums[index] += x.T @ x

        handles.append(layer.self_attn.register_forward_pre_hook(record))
    try:
        for start in range(0, len(ids), window):
            lm(torch.tensor([ids[start : start + window]]))
    finally:
        for handle in handles:
            handle.remove()
    return Calibration([total / len(ids) for total in sums], len(ids))


def convert_attention(
    lm: PretrainedLM,
    variant: str,
    *,
    n_kv_heads: int | None = None,
    method: str = "mean",
    kv_lora_rank: int | None = None,
    qk_rope_head_dim: int | None = None,
    calibration_text: str | None = None,
    calibration: Calibration | None = None,
) -> Conversion:
    """lm (a grouped-query model) with attention layers of `variant`, without training; see the module's docstring.
    The new model shares lm's embeddings, norms and MLPs."""
    source = lm.attention
    if source.variant == "mla":
        raise ValueError("conversions start from a grouped-query model (MHA, GQA or MQA), not from MLA.")
    if variant not in CONVERSIONS:
        raise ValueError(f"variant={variant!r}: choose one of {', '.join(CONVERSIONS)}.")
    needs_data = variant == "mla" or (variant == "gqa" and method == "pca")
    if needs_data and calibration is None:
        if calibration_text is None:
            raise ValueError(f"{variant} by activations needs calibration_text (or a calibration from calibrate()).")
        calibration = calibrate(lm, calibration_text)
    if variant == "mha":
        return _grouped(lm, source.n_heads, "mean", None)
    if variant == "gqa":
        if n_kv_heads is None:
            raise ValueError("gqa needs n_kv_heads.")
        if method not in KV_HEAD_METHODS:
            raise ValueError(f"method={method!r}: choose one of {', '.join(KV_HEAD_METHODS)}.")
        return _grouped(lm, n_kv_heads, method, calibration)
    if kv_lora_rank is None or qk_rope_head_dim is None:
        raise ValueError("mla needs kv_lora_rank (d_c) and qk_rope_head_dim (d_h^R).")
    assert calibration is not None
    return _latent(lm, kv_lora_rank, qk_rope_head_dim, calibration)


# --- grouped-query targets ------------------------------------------------------------------------------------------
def _grouped(lm: PretrainedLM, n_kv_heads: int, method: str, calibration: Calibration | None) -> Conversion:
    """n_kv_heads KV heads. New KV head j serves query heads j*R'..(j+1)*R'-1; it stands for the source KV heads
    those query heads read. When each new head stands for one source head (MHA, or the same grouping) it is that
    head, exactly; otherwise `method` pools them:
    - "mean": the average of their weights, query heads unchanged (Ainslie et al., GQA, 2023);
    - "pca": keys by one complex principal direction per RoPE frequency (query heads absorb their coefficient),
      values by principal components (o_proj absorbs the map back): the best rank reduction of the activations."""
    source = lm.attention
    target = AttentionConfig(
        variant="gqa",
        d_model=source.d_model,
        n_heads=source.n_heads,
        n_kv_heads=n_kv_heads,
        head_dim=source.head_dim,
        rope_theta=source.rope_theta,
        rope_interleave=source.rope_interleave,
    )
    if source.bias or source.o_bias:
        raise ValueError("conversions handle bias-free attention (Llama-style) only.")
    converted = lm.with_layers_of(target)
    report = ConversionReport("gqa", {"n_kv_heads": n_kv_heads, "method": method})
    for index, (old_layer, new_layer) in enumerate(zip(lm.decoder_layers, converted.decoder_layers, strict=True)):
        old = old_layer.self_attn
        assert isinstance(old, GroupedQueryAttention)  # convert_attention() checked the source's variant
        cov = calibration.covariances[index] if calibration is not None else None
        state, key_kept, value_kept = _grouped_layer(_head_weights(old, source), target, source.group_size, method, cov)
        if key_kept:
            report.kept.setdefault("shared key", []).append(sum(key_kept) / len(key_kept))
            report.kept.setdefault("shared value", []).append(sum(value_kept) / len(value_kept))
        _load(new_layer.self_attn, state, old.q_proj.weight.dtype)
    return Conversion(converted.eval().requires_grad_(False), report)


class HeadWeights(NamedTuple):
    """A grouped layer's projections per head, float64: q [H, D, d_model], k and v [G, D, d_model], o [d_model, H,
    D]."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    o: torch.Tensor


def _head_weights(layer: GroupedQueryAttention, cfg: AttentionConfig) -> HeadWeights:
    d = cfg.head_dim
    return HeadWeights(
        layer.q_proj.weight.detach().double().view(cfg.n_heads, d, -1),
        layer.k_proj.weight.detach().double().view(cfg.n_kv_heads, d, -1),
        layer.v_proj.weight.detach().double().view(cfg.n_kv_heads, d, -1),
        layer.o_proj.weight.detach().double().view(-1, cfg.n_heads, d),
    )


def _grouped_layer(
    w: HeadWeights, target: AttentionConfig, old_group: int, method: str, cov: torch.Tensor | None
) -> tuple[dict[str, torch.Tensor], list[float], list[float]]:
    """One layer's weights with target's KV heads (its state dict), and the energy each fitted key and value head
    kept (empty when none was fitted)."""
    new_group = target.group_size
    new_q, new_o = w.q.clone(), w.o.clone()
    new_k, new_v = [], []
    key_kept, value_kept = [], []
    for j in range(target.n_kv_heads):
        heads = range(j * new_group, (j + 1) * new_group)
        sources = sorted({h // old_group for h in heads})
        if len(sources) == 1:  # one source head: itself, no approximation
            key, value = w.k[sources[0]], w.v[sources[0]]
        elif method == "mean":
            # Average over the query heads served (= over the source heads, weighted by the heads each serves).
            key = torch.stack([w.k[h // old_group] for h in heads]).mean(0)
            value = torch.stack([w.v[h // old_group] for h in heads]).mean(0)
        else:
            assert cov is not None
            key, value, kept = _fitted_kv_head(w, heads, sources, old_group, cov, new_q=new_q, new_o=new_o)
            key_kept.append(kept[0])
            value_kept.append(kept[1])
        new_k.append(key)
        new_v.append(value)
    d_model = target.d_model
    state = {
        "q_proj.weight": new_q.reshape(-1, d_model),
        "k_proj.weight": torch.cat(new_k),
        "v_proj.weight": torch.cat(new_v),
        "o_proj.weight": new_o.reshape(d_model, -1),
    }
    return state, key_kept, value_kept


def _fitted_kv_head(
    w: HeadWeights,
    heads: range,
    sources: list[int],
    old_group: int,
    cov: torch.Tensor,
    *,
    new_q: torch.Tensor,
    new_o: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, tuple[float, float]]:
    """One KV head for query heads `heads`, fitted to the source heads they read: the shared rotary key and the
    principal values, and the energy each kept. Writes what the query heads absorb into new_q (each head's
    coefficient) and new_o (the values' map back)."""
    d = w.q.shape[1]
    queries = torch.stack([w.q[[h for h in heads if h // old_group == g]] for g in sources])
    shared_key, coefficients, key_kept = _shared_rotary_key(w.k[sources], cov, d // 2, queries)
    for h in heads:  # query h absorbs the conjugate coefficient of its own source head, per frequency
        new_q[h] = _rotate_rows(w.q[h], coefficients[sources.index(h // old_group)].conj(), d // 2)
    stacked = w.v[sources].reshape(-1, w.v.shape[-1])
    basis, value_kept = _principal_basis(stacked, cov, d)  # [s*d, d]
    for h in heads:  # v_source ≈ basis_block · v_new, so o_proj's columns for h become W_o,h · basis_block
        at = sources.index(h // old_group) * d
        new_o[:, h] = w.o[:, h] @ basis[at : at + d]
    return shared_key, basis.T @ stacked, (key_kept, value_kept)


def _complex_pairs(weight: torch.Tensor, half: int) -> torch.Tensor:
    """Rows of one head [.., D, d_model] in the rotate-half layout -> [.., D/2, d_model] complex: row i + i·row i+D/2,
    the number that RoPE multiplies by e^{i·angle_i}."""
    return torch.complex(weight[..., :half, :], weight[..., half:, :])


def _real_rows(pairs: torch.Tensor) -> torch.Tensor:
    """Inverse of _complex_pairs."""
    return torch.cat((pairs.real, pairs.imag), dim=-2)


def _rotate_rows(weight: torch.Tensor, coefficient: torch.Tensor, half: int) -> torch.Tensor:
    """A head's rows [D, d_model] times a complex coefficient per frequency [D/2]: commutes with RoPE."""
    return _real_rows(_complex_pairs(weight, half) * coefficient[:, None])


def _shared_rotary_key(
    heads_weights: torch.Tensor, cov: torch.Tensor, half: int, query_weights: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor, float]:
    """One key standing for several heads' keys [G, D, d_model], frequency by frequency: the leading eigenvector of
    E[z zᴴ] (z = the G heads' complex pairs at that frequency) gives the shared pair w = aᴴ z, and head g's pair is
    approximated by u_g · w. A score's error is the key's error times its query, so with query_weights (the query
    heads of each KV head, [G, R, D, d_model]) head g's pair is weighted by the energy of its queries at that
    frequency: a = weights · u, u_g = v_g / weight_g. Returns w's rows [D, d_model], u [G, D/2], and the
    (weighted) energy fraction kept."""
    pairs = _complex_pairs(heads_weights, half)  # [G, D/2, d_model]
    c = cov.to(pairs.dtype)
    if query_weights is None:
        weights = torch.ones(pairs.shape[:2], dtype=torch.float64)
    else:
        q_pairs = _complex_pairs(query_weights, half)  # [G, R, D/2, d_model]
        q_energy = torch.einsum("grid,de,grie->gi", q_pairs, c, q_pairs.conj()).real  # [G, D/2]
        weights = q_energy.clamp(min=1e-30).sqrt()
    shared, coefficients, kept, total = [], [], 0.0, 0.0
    for i in range(half):
        z = pairs[:, i] * weights[:, i, None]  # [G, d_model]
        moment = z @ c @ z.conj().T  # [G, G] Hermitian, E[z zᴴ]
        values, vectors = torch.linalg.eigh(moment)
        v = vectors[:, -1]
        shared.append(v.conj() @ z)
        coefficients.append(v / weights[:, i])
        kept += float(values[-1].real)
        total += float(values.real.sum())
    return _real_rows(torch.stack(shared)), torch.stack(coefficients, dim=1), kept / max(total, 1e-30)


def _principal_basis(weight: torch.Tensor, cov: torch.Tensor, rank: int) -> tuple[torch.Tensor, float]:
    """The top `rank` principal directions [out, rank] of y = W x under E[x xᵀ] = cov, and the energy kept."""
    moment = weight @ cov @ weight.T
    values, vectors = torch.linalg.eigh(moment)
    order = values.flip(0)
    return vectors.flip(1)[:, :rank], float(order[:rank].clamp(min=0).sum() / order.clamp(min=0).sum())


# --- MLA target -----------------------------------------------------------------------------------------------------
def mla_shape(source: AttentionConfig, kv_lora_rank: int, qk_rope_head_dim: int) -> AttentionConfig:
    """The MLA layer a conversion builds. Its decoupled rotary key uses the source's fastest qk_rope_head_dim / 2
    frequencies: attn_core's RoPE of width d_h^R has frequencies theta_R^(-2j/d_h^R), which equal the source head's
    first d_h^R / 2 frequencies theta^(-2j/D) when theta_R = theta^(d_h^R / D). The other dims become position-free
    (their rotation is dropped: small for the slowest frequencies over a short context, not zero)."""
    d = source.head_dim
    if qk_rope_head_dim % 2 or not 2 <= qk_rope_head_dim < d:
        raise ValueError(f"qk_rope_head_dim={qk_rope_head_dim}: an even width from 2 to {d - 2}.")
    return AttentionConfig(
        variant="mla",
        d_model=source.d_model,
        n_heads=source.n_heads,
        head_dim=d,
        kv_lora_rank=kv_lora_rank,
        qk_nope_head_dim=d - qk_rope_head_dim,  # qk_head_dim stays D, so the softmax scale 1/sqrt(D) is unchanged
        qk_rope_head_dim=qk_rope_head_dim,
        v_head_dim=d,
        rope_theta=source.rope_theta ** (qk_rope_head_dim / d),
        rope_interleave=source.rope_interleave,
        norm_eps=LATENT_NORM_EPS,
    )


def full_latent_rank(source: AttentionConfig, qk_rope_head_dim: int) -> int:
    """The latent width at which the joint K/V latent is exact: every KV head's position-free key dims and values."""
    return source.n_kv_heads * (source.head_dim - qk_rope_head_dim + source.head_dim)


def _latent(lm: PretrainedLM, kv_lora_rank: int, qk_rope_head_dim: int, calibration: Calibration) -> Conversion:
    """MLA from a grouped-query model (after TransMLA and MHA2MLA, without their fine-tuning):
    - decoupled RoPE: the fastest r = d_h^R / 2 frequencies keep their rotation in the shared k_rope, one complex
      principal direction per frequency across the KV heads (what a single shared key can hold; the rest of those
      frequencies' key energy is dropped); each query head absorbs its KV head's coefficient;
    - the other 32 - r frequencies of every KV head's key lose their rotation and join the values in a joint latent:
      the top d_c principal components of [α·k_nope; v] (α balances keys against values, TransMLA's BKV-PCA);
      kv_b_proj maps the latent back to each query head's k_nope and v."""
    source = lm.attention
    if source.rope_interleave:
        raise ValueError("mla conversion expects the rotate-half RoPE layout.")
    target = mla_shape(source, kv_lora_rank, qk_rope_head_dim)
    limit = full_latent_rank(source, qk_rope_head_dim)
    if not 1 <= kv_lora_rank <= limit:
        raise ValueError(f"kv_lora_rank={kv_lora_rank}: from 1 to {limit} (the exact, full-rank latent).")
    converted = lm.with_layers_of(target)
    report = ConversionReport("mla", {"kv_lora_rank": kv_lora_rank, "qk_rope_head_dim": qk_rope_head_dim})
    d, half, r = source.head_dim, source.head_dim // 2, qk_rope_head_dim // 2
    # Position-free dims of a head, in the same order for queries and keys: frequencies r..half-1, both halves.
    nope = torch.cat((torch.arange(r, half), torch.arange(half + r, d)))
    n_kv, group = source.n_kv_heads, source.group_size
    for index, (old_layer, new_layer) in enumerate(zip(lm.decoder_layers, converted.decoder_layers, strict=True)):
        old = old_layer.self_attn
        assert isinstance(old, GroupedQueryAttention)  # convert_attention() checked the source's variant
        cov = calibration.covariances[index]
        w_q = old.q_proj.weight.detach().double().view(source.n_heads, d, -1)
        w_k = old.k_proj.weight.detach().double().view(n_kv, d, -1)
        w_v = old.v_proj.weight.detach().double().view(n_kv, d, -1)
        # Rotary part: the shared key over the fastest r frequencies (rows of those frequencies only).
        fast = torch.cat((torch.arange(r), torch.arange(half, half + r)))
        queries = w_q[:, fast].view(n_kv, group, 2 * r, -1)
        k_rope, coefficients, rope_kept = _shared_rotary_key(w_k[:, fast], cov, r, queries)  # [2r, d_model], [G, r]
        q_rows = []
        for h in range(source.n_heads):
            q_rope = _rotate_rows(w_q[h, fast], coefficients[h // group].conj(), r)
            q_rows.append(torch.cat((w_q[h, nope], q_rope)))
        # Joint latent of the position-free keys and the values of all KV heads.
        keys = w_k[:, nope].reshape(-1, w_k.shape[-1])  # [G*(D-2r), d_model]
        values = w_v.reshape(-1, w_v.shape[-1])  # [G*D, d_model]
        balance = math.sqrt(_energy(values, cov) / max(_energy(keys, cov), 1e-30))
        joint = torch.cat((balance * keys, values))
        basis, latent_kept = _principal_basis(joint, cov, kv_lora_rank)  # [G*(2D-2r), d_c]
        down = basis.T @ joint  # [d_c, d_model]: c = down · x
        scale = math.sqrt(max(_energy(down, cov) / kv_lora_rank, 1e-30))  # the latent's mean square -> about 1
        up_keys = basis[: keys.shape[0]].reshape(n_kv, d - 2 * r, kv_lora_rank) * (scale / balance)
        up_values = basis[keys.shape[0] :].reshape(n_kv, d, kv_lora_rank) * scale
        kv_b = torch.cat([torch.cat((up_keys[h // group], up_values[h // group])) for h in range(source.n_heads)])
        norm_weight = torch.full((kv_lora_rank,), math.sqrt(LATENT_NORM_EPS), dtype=torch.float64)
        state = {
            "q_proj.weight": torch.cat(q_rows),
            "kv_a_proj_with_mqa.weight": torch.cat((down / scale, k_rope)),
            "kv_a_layernorm.weight": norm_weight,
            "kv_b_proj.weight": kv_b,
            "o_proj.weight": old.o_proj.weight.detach(),
        }
        _load(new_layer.self_attn, state, old.q_proj.weight.dtype)
        report.kept.setdefault("rotary key", []).append(rope_kept)
        report.kept.setdefault("latent", []).append(latent_kept)
    return Conversion(converted.eval().requires_grad_(False), report)


def _energy(weight: torch.Tensor, cov: torch.Tensor) -> float:
    """E[|W x|²] under E[x xᵀ] = cov."""
    return float(torch.einsum("od,de,oe->", weight, cov, weight))


def _load(module: torch.nn.Module, state: dict[str, torch.Tensor], dtype: torch.dtype) -> None:
    """Weights (fitted in float64) in the source model's dtype, contiguous, replacing the meta tensors."""
    module.load_state_dict({name: value.to(dtype).contiguous() for name, value in state.items()}, assign=True)
