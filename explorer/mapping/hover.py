"""The animated figure's words: hover HTML for each bar, the cache's bytes under the row, and each frame's title."""

from __future__ import annotations

from attn_core import AttentionConfig, bytes_per_element, kv_cache_bytes
from explorer.i18n import _, format_bytes, n_
from explorer.probes.mapping import MorphFrame
from explorer.settings import Settings

from .frames import head_span, ranges_text, readers, store_label, store_symbol
from .geometry import QueryBar, StoreBar


def _dims(settings: Settings) -> str:
    """The start of a cached tensor's shape at the settings' batch and length: "[batch, tokens, "."""
    return f"[{settings.batch}, {settings.seq_len:,}, "


def read_text(frame: MorphFrame, cfg: AttentionConfig, settings: Settings) -> str:
    """What one query head reads from the cache at each decode step, and its bytes."""
    batch, tokens, dims = settings.batch, settings.seq_len, _dims(settings)
    element = bytes_per_element(settings.dtype)
    if frame.variant == "mla":
        widths = cfg.latent_widths
        dc, dr = widths.kv_lora_rank, widths.qk_rope_head_dim
        per_head_bytes = batch * tokens * (dc + dr) * element
        return _(
            "per head: {c_kv} {c_kv_shape} and {k_rope} {k_rope_shape}, the same for every head<br>"
            "its own K, V are rebuilt from them: K_h {k}, V_h {v}<br>"
            "cache bytes read per head and decode step: {size}",
            c_kv=store_symbol("c_kv"),
            k_rope=store_symbol("k_rope"),
            c_kv_shape=f"{dims}{dc}]",
            k_rope_shape=f"{dims}{dr}]",
            k=f"{dims}{widths.qk_nope_head_dim + dr}]",
            v=f"{dims}{cfg.v_head_dim}]",
            size=format_bytes(per_head_bytes),
        )
    group = settings.heads // frame.n_kv_heads
    per_head_bytes = 2 * batch * tokens * cfg.head_dim * element
    return _(
        "per head: K and V of its KV head, {shape} each<br>cache bytes read per head and decode step: {size}",
        shape=f"{dims}{cfg.head_dim}]",
        size=format_bytes(per_head_bytes),
    ) + ("<br>" + _("(the same bytes serve all {n} heads of a group)", n=group) if group > 1 else "")


def query_hover(frame: MorphFrame, bars: list[QueryBar], read: str) -> list[str]:
    """Each query bar's hover: its heads, the stores the probe found them reading, then `read` (read_text)."""
    hover = []
    for bar in bars:
        names = [frame.stores[s] for s in bar.stores]
        if frame.variant == "mla":
            source = _("reads {stores}", stores=_(", ").join(store_label(n) for n in names))
        else:
            source = n_(
                "reads KV head {heads}",
                "reads KV heads {heads}",
                len(names),
                heads=ranges_text([int(n[2:]) for n in names]),
            )
        drawn = "" if bar.stop - bar.start == 1 else " " + _("({n} heads drawn as one)", n=bar.stop - bar.start)
        hover.append(f"<b>{head_span(bar.start, bar.stop, 'query')}</b>{drawn}<br>{source}<br>{read}")
    return hover


def store_hover(frame: MorphFrame, cfg: AttentionConfig, settings: Settings, stores: list[StoreBar]) -> list[str]:
    """Each KV bar's hover: what it holds, its bytes at the settings, and the query heads found reading it."""
    batch, tokens, dims = settings.batch, settings.seq_len, _dims(settings)
    element = bytes_per_element(settings.dtype)
    hover = []
    for store in stores:
        members = store.members
        who = sorted({h for m in members for h in readers(frame, frame.stores[m])})
        if frame.variant == "mla":
            widths = cfg.latent_widths
            width = widths.qk_rope_head_dim if store.rotary else widths.kv_lora_rank
            what = f"{store_label(frame.stores[members[0]])}: {dims}{width}]"
            nbytes = batch * tokens * width * element
        elif len(members) > 1:
            what = _("K and V: {shape} each, × {n} KV heads", shape=f"{dims}{cfg.head_dim}]", n=len(members))
            nbytes = 2 * batch * tokens * cfg.head_dim * element * len(members)
        else:
            what = _("K and V: {shape} each", shape=f"{dims}{cfg.head_dim}]")
            nbytes = 2 * batch * tokens * cfg.head_dim * element
        hover.append(
            f"<b>{store.label}</b><br>{what}<br>"
            + _("cached: {size}", size=format_bytes(nbytes))
            + "<br>"
            + _("read by query heads {heads}", heads=ranges_text(who))
        )
    return hover


def cache_text(frame: MorphFrame, cfg: AttentionConfig, settings: Settings) -> tuple[str, str]:
    """Under the KV row, two lines each: numbers and bytes cached per token against MHA's; the whole cache at the
    settings."""
    element = bytes_per_element(settings.dtype)
    per_token = cfg.cache_elements_per_token
    ratio = per_token / (2 * settings.heads * settings.head_dim)
    formula = (
        _("latent {latent} + rotary key {rope}", latent=cfg.kv_lora_rank, rope=cfg.qk_rope_head_dim)
        if frame.variant == "mla"
        else f"2·{frame.n_kv_heads}·{settings.head_dim}"
    )
    # Short lines: each half must fit half a phone's width (Plotly does not wrap them).
    cached = _(
        "cached per token: <b>{ratio}× MHA</b><br>{formula} = {n} numbers = {size}",
        formula=formula,
        n=per_token,
        size=format_bytes(per_token * element),
        ratio=f"{ratio:.3g}",
    )
    whole = _(
        "whole cache: <b>{total}</b><br>batch {batch} × {tokens} in {dtype}",
        batch=settings.batch,
        tokens=n_("{n} token", "{n} tokens", settings.seq_len),
        dtype=settings.dtype,
        total=format_bytes(kv_cache_bytes(cfg, settings.batch, settings.seq_len, settings.dtype)),
    )
    return cached, whole


def frame_title(frame: MorphFrame, cfg: AttentionConfig, heads: int) -> str:
    if frame.variant == "mla":
        return _(
            "MLA: all heads read one latent {c_kv} ({latent}) and one rotary key {k_rope} ({rope})",
            c_kv=store_symbol("c_kv"),
            k_rope=store_symbol("k_rope"),
            latent=cfg.kv_lora_rank,
            rope=cfg.qk_rope_head_dim,
        )
    if frame.n_kv_heads == heads:
        if heads == 1:
            return _("MHA: the one query head reads its own K/V head")
        return _("MHA: each of the {n} query heads reads its own K/V head", n=heads)
    if frame.n_kv_heads == 1:
        if heads == 1:
            return _("MQA: the one query head reads one K/V head")
        return _("MQA: all {n} query heads read one K/V head", n=heads)
    return _(
        "GQA, {groups} groups: each K/V head serves {size} query heads",
        groups=frame.n_kv_heads,
        size=heads // frame.n_kv_heads,
    )


def bundle_note(frame: MorphFrame, stores: list[StoreBar], bars: list[QueryBar], heads: int) -> str:
    """How many heads a bar stands for, where bars are bundles."""
    sizes = [_("query bars: {n} heads each", n=bars[0].stop - bars[0].start)] if len(bars) < heads else []
    if frame.variant != "mla" and len(stores) < len(frame.stores):
        sizes.append(_("KV bars: {n} KV heads each", n=len(stores[0].members)))
    return " · ".join(sizes)
