"""The mapping page's tables and CSV rows: the animation's numbers, the tensor shapes, MLA's two ways."""

from __future__ import annotations

from attn_core import AttentionConfig, decode_flops_per_token
from explorer.charts import shape_text
from explorer.i18n import N_, _, fmt
from explorer.probes.mapping import MlaWays, MorphFrame, PathShape, narrowed

from .frames import readers


def mla_cost_rows(cfg: AttentionConfig, ways: MlaWays, seq_len: int) -> list[dict]:
    """FLOPs per decoded token both ways (your layer at your length, and the timed layer at the timed length), with
    the measured time of each way's decode step."""
    timed_cfg, timed = narrowed(cfg, ways.input_width), ways.context_len
    rows = []
    for name, absorbed in ((N_("naive: up-project the cache"), False), (N_("absorbed weights"), True)):
        rows.append(
            {
                _("Way"): _(name),
                _("FLOPs per token, your layer at {n} cached", n=seq_len): _mflop(
                    decode_flops_per_token(cfg, seq_len, absorbed=absorbed)
                ),
                _("FLOPs per token, timed layer at {n} cached", n=timed): _mflop(
                    decode_flops_per_token(timed_cfg, timed, absorbed=absorbed)
                ),
                _(
                    "Measured decode step at {n} cached", n=timed
                ): f"{fmt(ways.absorbed_ms if absorbed else ways.naive_ms, 2)} ms",
            }
        )
    return rows


def _mflop(flops: float) -> str:
    return f"{fmt(flops / 1e6, 2)} MFLOP"


def mapping_rows(frames: list[MorphFrame]) -> list[dict]:
    """The CSV: for every step and query head, the stores it was seen to read and how far its output moved."""
    rows = []
    for frame in frames:
        for head in range(frame.reads.shape[1]):
            read = [s for s in range(len(frame.stores)) if frame.reads[s, head]]
            rows.append(
                {
                    "step": frame.key,
                    "query_head": head,
                    "reads": " ".join(frame.stores[s] for s in read),
                    "smallest_move_of_a_read_store": min(float(frame.change[s, head]) for s in read) if read else "",
                    "largest_move_of_an_unread_store": max(
                        (float(frame.change[s, head]) for s in range(len(frame.stores)) if s not in read),
                        default="",
                    ),
                }
            )
    return rows


def separation(frames: list[MorphFrame]) -> tuple[float, float | None]:
    """Across all steps: the smallest output move of a head whose store was disturbed, the largest of one whose was not."""
    moved = min(float(f.change[f.reads].min()) for f in frames)
    unmoved = [float(f.change[~f.reads].max()) for f in frames if (~f.reads).any()]
    return moved, (max(unmoved) if unmoved else None)


def formula_agrees(frame: MorphFrame) -> bool:
    """Does what was read off the layer equal the textbook rule, head i reads KV head i // (heads / groups)?"""
    heads = frame.reads.shape[1]
    if frame.variant == "mla":
        return bool(frame.reads.all())
    group = heads // frame.n_kv_heads
    return all(readers(frame, f"kv{g}") == list(range(g * group, (g + 1) * group)) for g in range(frame.n_kv_heads))


def shape_table(rows: list[PathShape], way: str) -> list[dict]:
    """Display rows for one way ("both" rows appear in either); shapes as text with thousands separators."""
    return [
        {
            _("Step"): _(row.step),
            _("Prefill"): shape_text(row.prefill),
            _("Decode 1 token"): shape_text(row.decode),
            _("Note"): _(row.note, **row.note_values),
        }
        for row in rows
        if row.way in ("both", way)
    ]
