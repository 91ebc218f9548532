"""The mapping page's decode of Llama 4's chunked layer and Gemma 3n's shared layer through AppTest: a chunked cache
holds its chunk and drops it whole as the next begins (against the chunk formula), a consumer layer reads every token
of its producer's cache and holds nothing, with the mark naming that layer; the bytes are the core's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from attn_core import AttentionConfig, bytes_per_element
from explorer.kinds import registry
from explorer.mapping import reads
from explorer.settings import Settings
from tests.app.helpers import chart_specs, no_exception, open_script

PAGE = Path(__file__).resolve().parents[2] / "pages" / "mapping.py"
ALL = "chunked,shared"


def open_page(**params):
    at = open_script(PAGE, params)
    no_exception(at)
    return at


def frame_rows(at) -> tuple[dict, np.ndarray]:
    (spec,) = [spec for spec in chart_specs(at) if spec.get("frames") and spec["frames"][0]["name"] == "0"]
    return spec, np.stack([np.asarray(frame["data"][0]["z"], dtype=np.float64)[0] for frame in spec["frames"]])


def test_a_chunked_layers_frames_read_its_chunk_and_drop_it_as_the_next_begins():
    at = open_page(design=ALL, map_design="chunked", chunk="8", map_tokens="32")
    _, rows = frame_rows(at)
    t, j = np.arange(32)[:, None], np.arange(32)[None]
    assert np.array_equal(rows == 2, (j <= t) & (j // 8 == t // 8))
    assert np.array_equal(np.isnan(rows), ~((j <= t) & (j // 8 == t // 8)))  # nothing of an earlier chunk held
    assert any("at tokens 0, 8, 16, 24 here" in caption.value for caption in at.caption)


def test_a_consumer_layers_frames_read_every_token_of_its_producers_cache_and_hold_none():
    at = open_page(design=ALL, map_design="shared", map_tokens="32")
    spec, rows = frame_rows(at)
    assert np.array_equal(rows == 2, np.tri(32, dtype=bool))
    assert not (rows == 1).any()
    assert "layer 0's cache" in spec["frames"][3]["layout"]["title"]["text"].replace("<br>", " ")
    assert any("layer 0" in note["text"] for note in spec["layout"]["annotations"])


def test_the_decodes_bytes_are_the_chunk_formulas_and_a_consumers_zero():
    """Bytes by hand: 2 (K and V) · G · D · tokens held · 2 B (bfloat16), for the chunk's (T − 1) mod C + 1 tokens;
    a consumer 0 held, its producer's every token read."""
    settings = Settings(d_model=64, heads=4, groups=2, chunk=4)
    per_token = 2 * 2 * 16 * bytes_per_element(torch.bfloat16)
    assert AttentionConfig("gqa", d_model=64, n_heads=4, n_kv_heads=2).head_dim == 16
    chunk = reads.decode_reads(registry.design(settings, "chunked"), 0, 10, "bfloat16", 1)
    assert chunk.held_bytes == chunk.read_bytes == tuple(per_token * ((t % 4) + 1) for t in range(10))
    consumer = reads.decode_reads(registry.design(settings, "shared"), 0, 10, "bfloat16", 1)
    assert consumer.held_bytes == (0,) * 10
    assert consumer.read_bytes == tuple(per_token * (t + 1) for t in range(10))
    assert consumer.source == 0
