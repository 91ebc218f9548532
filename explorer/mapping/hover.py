"""The animated figure's words: hover HTML for each bar, the cache's bytes under the row, and each frame's title."""

from __future__ import annotations

from attn_core import AttentionConfig
from attn_core.accounting import bytes_per_element, kv_cache_bytes
from explorer.charts import format_bytes
from explorer.probes.mapping import MorphFrame
from explorer.settings import Settings
from explorer.words import count

from .frames import head_span, ranges_text, readers, store_label
from .geometry import QueryBar, StoreBar


def _dims(settings: Settings) -> str:
    """The start of a cached tensor's shape at the settings' batch and length: "[batch, tokens, "."""
    return f"[{settings.batch}, {settings.seq_len:,}, "


def read_text(frame: MorphFrame, cfg: AttentionConfig, settings: Settings) -> str:
    """What one query head reads from the cache at each decode step, and its bytes."""
    batch, tokens, dims = settings.batch, settings.seq_len, _dims(settings)
    element = bytes_per_element(settings.dtype)
    if frame.variant == "mla":
        dc, dr = cfg.kv_lora_rank, cfg.qk_rope_head_dim
        per_head_bytes = batch * tokens * (dc + dr) * element
        return (
            f"per head: c_kv {dims}{dc}] and k_rope {dims}{dr}], the same for every head<br>"
            f"its own K, V are rebuilt from them: K_h {dims}{cfg.qk_nope_head_dim + dr}], V_h {dims}{cfg.v_head_dim}]<br>"
            f"cache bytes read per head and decode step: {format_bytes(per_head_bytes)}"
        )
    group = settings.heads // frame.n_kv_heads
    per_head_bytes = 2 * batch * tokens * cfg.head_dim * element
    return (
        f"per head: K and V of its KV head, {dims}{cfg.head_dim}] each<br>"
        f"cache bytes read per head and decode step: {format_bytes(per_head_bytes)}"
        + (f"<br>(the same bytes serve all {group} heads of a group)" if group > 1 else "")
    )


def query_hover(frame: MorphFrame, bars: list[QueryBar], read: str) -> list[str]:
    """Each query bar's hover: its heads, the stores the probe found them reading, then `read` (read_text)."""
    hover = []
    for bar in bars:
        names = [frame.stores[s] for s in bar.stores]
        source = (
            ", ".join(store_label(n) for n in names)
            if frame.variant == "mla"
            else f"KV head{'s' if len(names) > 1 else ''} {ranges_text([int(n[2:]) for n in names])}"
        )
        drawn = "" if bar.stop - bar.start == 1 else f" ({bar.stop - bar.start} heads drawn as one)"
        hover.append(f"<b>{head_span(bar.start, bar.stop, 'query head')}</b>{drawn}<br>reads {source}<br>{read}")
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
            width = cfg.kv_lora_rank if store.label == "c_kv" else cfg.qk_rope_head_dim
            what = f"{store_label(store.label)}: {dims}{width}]"
            nbytes = batch * tokens * width * element
        else:
            what = f"K and V: {dims}{cfg.head_dim}] each" + (f", × {len(members)} KV heads" if len(members) > 1 else "")
            nbytes = 2 * batch * tokens * cfg.head_dim * element * len(members)
        hover.append(
            f"<b>{store.label}</b><br>{what}<br>cached: {format_bytes(nbytes)}<br>read by query heads {ranges_text(who)}"
        )
    return hover


def cache_text(frame: MorphFrame, cfg: AttentionConfig, settings: Settings) -> str:
    """Under the KV row: numbers and bytes cached per token against MHA's, and the whole cache at the settings."""
    element = bytes_per_element(settings.dtype)
    per_token = cfg.cache_elements_per_token
    ratio = per_token / (2 * settings.heads * settings.head_dim)
    formula = (
        f"d_c + d_h^R = {cfg.kv_lora_rank} + {cfg.qk_rope_head_dim}"
        if frame.variant == "mla"
        else f"2·{frame.n_kv_heads}·{settings.head_dim}"
    )
    return (
        f"cached per token: {formula} = {per_token:,} numbers = {format_bytes(per_token * element)} = <b>{ratio:.3g}× MHA</b><br>"
        f"whole cache at batch {settings.batch} × {count(settings.seq_len, 'token')} in {settings.dtype}: "
        f"<b>{format_bytes(kv_cache_bytes(cfg, settings.batch, settings.seq_len, settings.dtype))}</b>"
    )


def frame_title(frame: MorphFrame, cfg: AttentionConfig, heads: int) -> str:
    if frame.variant == "mla":
        return f"MLA: all heads read one latent c_kv ({cfg.kv_lora_rank}) and one rotary key k_rope ({cfg.qk_rope_head_dim})"
    if frame.n_kv_heads == heads:
        return f"MHA: {'the one query head reads' if heads == 1 else f'each of the {heads} query heads reads'} its own K/V head"
    if frame.n_kv_heads == 1:
        return f"MQA: {'the one query head reads' if heads == 1 else f'all {heads} query heads read'} one K/V head"
    return f"GQA, {frame.n_kv_heads} groups: each K/V head serves {heads // frame.n_kv_heads} query heads"


def bundle_note(frame: MorphFrame, stores: list[StoreBar], bars: list[QueryBar], heads: int) -> str:
    """How many heads a bar stands for, where bars are bundles."""
    sizes = [f"query bars: {bars[0].stop - bars[0].start} heads each"] if len(bars) < heads else []
    if frame.variant != "mla" and len(stores) < len(frame.stores):
        sizes.append(f"KV bars: {len(stores[0].members)} KV heads each")
    return " · ".join(sizes)
