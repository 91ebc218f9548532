"""The second chapter (steps 13 onwards): each step's text quotes what its chart shows, and both are checked against
an independent reference — a published config's closed form written out here, the stored window table read as JSON,
the trained model's attention and keys recomputed with torch."""

from __future__ import annotations

import io
import json
import math
import re

import numpy as np
import pytest
import torch

from attn_core import PUBLISHED, context_length
from explorer.i18n import format_bytes, percent, set_language
from explorer.lesson import after_mla_views as chapter
from explorer.lesson import steps
from tests.app.conftest import media  # noqa: F401  (the fixture: what a download button serves)
from tests.app.helpers import chart_specs, no_exception, open_page

T = chapter.TOKENS
BF16 = 2  # bytes: the published models' caches are compared in 16 bits


def number_of(key: str) -> int:
    return next(i for i, step in enumerate(steps.STEPS, 1) if step.key == key)


def opened(key: str, lang: str = "en"):
    """The step's page: its one chart's spec, and every text it shows (the answer's too)."""
    at = open_page("lesson", {"step": str(number_of(key)), "lang": lang})
    no_exception(at)
    (spec,) = chart_specs(at)
    return spec, " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)


def trace(spec: dict, name: str) -> dict:
    (found,) = [t for t in spec["data"] if t.get("name") == name]
    return found


def at_t(found: dict) -> float:
    return found["y"][list(found["x"]).index(T)]


def in_language(lang: str, make, *args):
    set_language(lang)
    try:
        return make(*args)
    finally:
        set_language("en")


def test_the_second_chapter_follows_the_first():
    keys = [step.key for step in steps.STEPS]
    assert keys[:12] == ["sdpa", "heads", "cache", "mqa", "gqa", "trained", "pitfall", "mla", "rope", "absorb",
                         "choose", "healed"], "links to steps 1-12 open what they did"  # fmt: skip
    assert keys[12:] == ["axes", "window", "sinks", "sparse", "compressed", "linear", "full_again", "shared_kv",
                         "bits", "choose2026"]  # fmt: skip


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_axes_step_quotes_its_grids_cells_and_the_closed_forms(lang):
    """DeepSeek-V3's width cut is MHA's entry over MLA's, 128 · (192 + 128) / (512 + 64); Llama 3 8B's cache at 128K
    is 2 · 32 layers · 8 KV heads · 128 · T in 16 bits."""
    spec, text = opened("axes", lang)
    (grid,) = spec["data"]
    v3 = PUBLISHED["DeepSeek-V3"]
    width = v3["num_attention_heads"] * (v3["qk_nope_head_dim"] + v3["qk_rope_head_dim"] + v3["v_head_dim"])
    width /= v3["kv_lora_rank"] + v3["qk_rope_head_dim"]
    row = grid["text"][list(grid["y"]).index("DeepSeek-V3")]
    shown = row[2].rstrip("×")  # the width column
    assert shown == in_language(lang, chapter.sig, width)
    assert shown in text
    llama = 2 * 32 * 8 * 128 * T * BF16
    assert format_bytes(llama) in text
    best = max(range(len(grid["y"])), key=lambda i: grid["z"][i][4] if grid["z"][i][4] is not None else -1)
    assert grid["text"][best][4].rstrip("×") in text, "the largest cut in all four, as the grid's last column shows it"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_axes_step_draws_the_models_it_names_and_one_of_each_kind_of_layer(lang):
    """Issue #47: all published models made the slide's plot too short to name each row. The step draws the models
    its words name and the first published model of each kind of layer (the core's own reading of each config), and
    says how many of the published models that is; the axes page draws them all."""
    from attn_core import describe_model

    spec, text = opened("axes", lang)
    (grid,) = spec["data"]
    rows = set(grid["y"])
    firsts: dict[str, str] = {}
    for name, config in PUBLISHED.items():
        for kind in describe_model(config).layer_kinds:
            firsts.setdefault(kind, name)
    named = {name for name in PUBLISHED if re.search(re.escape(name) + r"(?!\w|\.\d)", text)}  # not V3 in V3.2
    assert {chapter.PLAIN_MODEL, chapter.MLA_MODEL} <= named
    assert rows == named | set(firsts.values())
    assert len(rows) < len(PUBLISHED)
    assert list(grid["y"]) == [name for name in reversed(PUBLISHED) if name in rows], "in published order, top down"
    title = spec["layout"]["title"]["text"]
    for count in (len(rows), len(PUBLISHED)):
        assert re.search(rf"\b{count}\b", title), (count, title)
        assert re.search(rf"\b{count}\b", text), count


@pytest.mark.parametrize("window", [768, 680])
def test_the_axes_slide_leaves_each_row_room_for_its_name(window):
    """Plotly names a row of a category axis only where the row is 1.2 times its name's size tall (its category
    autotick): the grid as presenter mode sends it for a 1024-px-wide window `window` px tall leaves each row that
    much, its names and numbers at 14 px at least. (The browser suite reads the names as drawn.)"""
    from explorer.charts import _as_drawn
    from explorer.lesson import after_mla_figures, keys, views
    from explorer.present import MIN_TEXT_PX

    height = views.SLIDE_CHART_HEIGHT - (keys.SLIDE_SCREEN_PX - window)
    spec = in_language("en", chapter.four_axes, "en").spec
    drawn = _as_drawn(after_mla_figures.grid_on_a_slide(spec, height), height, present=True)
    layout, (grid,) = drawn["layout"], drawn["data"]
    plot = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
    names, numbers = layout["yaxis"]["tickfont"]["size"], grid["textfont"]["size"]
    assert min(names, numbers) >= MIN_TEXT_PX
    assert len(grid["y"]) * round(1.2 * names) <= plot, (names, plot)


def test_the_window_step_quotes_gemma_3s_window_and_full_layers():
    """Gemma 3 27B: 52 sliding layers of 16 KV heads × 128 hold min(T, W − 1) tokens, 10 full layers T tokens."""
    spec, text = opened("window")
    config = PUBLISHED["Gemma 3 27B"]["text_config"]
    heads, width, window = config["num_key_value_heads"], config["head_dim"], config["sliding_window"]
    sliding = 52 * 2 * heads * width * (window - 1) * BF16
    full = 10 * 2 * heads * width * T * BF16
    assert at_t(trace(spec, "sliding window layers (× 52)")) == sliding
    assert at_t(trace(spec, "full attention layers (× 10)")) == full
    for figure in (format_bytes(sliding), format_bytes(full), percent(full / (full + sliding)), "1,024"):
        assert figure in text, figure
    # the W - 1 on screen, where the bytes are (issue #47): 52 × 1,023 tokens × a row of 2 · 16 · 128 · 2 B
    assert f"52 × 1,023 tokens × {format_bytes(2 * heads * width * BF16)} = {format_bytes(sliding)}" in text


def test_the_sinks_step_quotes_the_stored_perplexities_and_the_models_own_first_token_share():
    from attn_core.pretrained import load_pretrained
    from explorer.lab.window_table import WINDOW_TABLE_PATH
    from explorer.trained.link import DEFAULT_TEXTS

    spec, text = opened("sinks")
    rows = json.loads(WINDOW_TABLE_PATH.read_text(encoding="utf-8"))["rows"]
    stored = {(r["window"], r["sink_tokens"]): r["perplexity"] for r in rows if r["pattern"] in (None, "every")}
    window = chapter.SINK_WINDOW
    without, kept = trace(spec, "window only"), trace(spec, "window + first token")
    assert without["y"][without["x"].index(str(window))] == stored[(window, 0)]
    assert kept["y"][kept["x"].index(str(window))] == stored[(window, 1)]
    for sinks in (0, 1, 4):
        assert f"{stored[(window, sinks)]:.1f}" in text
    assert f"{stored[(None, 0)]:.1f}" in text
    # the share, recomputed from the model's own weights: mean weight of queries 1.. on key 0
    lm = load_pretrained()
    ids = lm.encode(DEFAULT_TEXTS["en"])
    with torch.inference_mode():
        _logits, maps = lm(torch.tensor([ids]), return_attention=True)
    shares = torch.stack([layer[0, :, 1:, 0].mean(-1) for layer in maps]).float()  # [layers, heads]
    # the bars count each layer's heads over half on it, and the words quote their sum (issue 47: "105 of 270 heads"
    # was not readable from a chart of each layer's mean)
    (bars,) = [t for t in spec["data"] if t["type"] == "bar"]
    assert bars["y"] == (shares > 0.5).sum(dim=1).tolist()
    said = f"{sum(bars['y'])} of {shares.numel()} heads"
    assert said in text
    assert [a["text"] for a in spec["layout"]["annotations"] if a["text"] == said], "the chart writes the count too"


def test_the_sparse_step_quotes_what_v32_holds_and_reads():
    """DeepSeek-V3.2 holds (d_c + d_h^R + d_I) · T per layer and a step reads d_I · T + (d_c + d_h^R) · min(T, k);
    DeepSeek-V3 holds and reads (d_c + d_h^R) · T."""
    spec, text = opened("sparse")
    config = PUBLISHED["DeepSeek-V3.2"]
    layers, latent = config["num_hidden_layers"], config["kv_lora_rank"] + config["qk_rope_head_dim"]
    index, k = config["index_head_dim"], config["index_topk"]
    held = layers * (latent + index) * T * BF16
    read = layers * (index * T + latent * min(T, k)) * BF16
    base = layers * latent * T * BF16
    assert at_t(trace(spec, "DeepSeek-V3.2: held")) == held
    assert at_t(trace(spec, "DeepSeek-V3.2: read by a step")) == read
    assert at_t(trace(spec, "DeepSeek-V3: read by a step")) == base
    for figure in (format_bytes(held), format_bytes(read), percent(held / base), percent(read / base), "2,048"):
        assert figure in text, figure


def test_the_compressed_step_quotes_v4s_closed_form():
    """V4-Flash at T (a multiple of both rates): CSA layers keep (D + d_I) · (T/m + 2m) entries and a window of W − 1,
    HCA layers D · (W − 1 + T/m'), its two sliding layers D · (W − 1); one K = V head of width D."""
    spec, text = opened("compressed")
    config = PUBLISHED["DeepSeek-V4-Flash"]
    rates = config["compress_ratios"][: config["num_hidden_layers"]]  # one more for the next-token module
    width, index, window = config["head_dim"], config["index_head_dim"], config["sliding_window"]
    csa = rates.count(4) * ((width + index) * (T // 4 + 2 * 4) + width * (window - 1)) * BF16
    hca = rates.count(128) * width * (window - 1 + T // 128) * BF16
    sliding = rates.count(0) * width * (window - 1) * BF16
    held = csa + hca + sliding
    assert at_t(trace(spec, "DeepSeek-V4-Flash: held")) == held
    v3 = PUBLISHED["DeepSeek-V3"]
    base = v3["num_hidden_layers"] * (v3["kv_lora_rank"] + v3["qk_rope_head_dim"]) * T * BF16
    for figure in (format_bytes(held), percent(held / base), "512"):
        assert figure in text, figure


def test_the_linear_step_quotes_qwen3_nexts_state_and_full_layers():
    """Gated DeltaNet's state: H_v · d_k · d_v float32 numbers and a (K − 1)-token convolution tail over
    2 · H_k · d_k + H_v · d_v channels, whatever T; a full layer 2 · G · D · T."""
    spec, text = opened("linear")
    c = PUBLISHED["Qwen3-Next-80B-A3B"]
    hv, hk, dk, dv = (c[k] for k in ("linear_num_value_heads", "linear_num_key_heads", "linear_key_head_dim",
                                     "linear_value_head_dim"))  # fmt: skip
    layers, every = c["num_hidden_layers"], c["full_attention_interval"]
    full_layers = layers // every
    state = (layers - full_layers) * (
        hv * dk * dv * 4 + (c["linear_conv_kernel_dim"] - 1) * (2 * hk * dk + hv * dv) * BF16
    )
    full = full_layers * 2 * c["num_key_value_heads"] * c["head_dim"] * T * BF16
    assert at_t(trace(spec, f"linear attention layers (× {layers - full_layers})")) == state
    assert at_t(trace(spec, f"full attention layers (× {full_layers})")) == full
    for figure in (format_bytes(state), format_bytes(full)):
        assert figure in text, figure


def own_quantisation(x: torch.Tensor, bits: int, group: int, axis: int) -> torch.Tensor:
    """Min/max asymmetric rounding of x [T, D] in groups of `group` along `axis` (0: tokens, per channel; 1: channels,
    per token), written here without attn_core.quant."""
    moved = x if axis == 1 else x.T
    rows, width = moved.shape
    groups = moved.reshape(rows, width // group, group)
    low, high = groups.min(-1, keepdim=True).values, groups.max(-1, keepdim=True).values
    scale = (high - low) / (2**bits - 1)
    codes = torch.where(scale > 0, ((groups - low) / torch.where(scale > 0, scale, 1)).round(), 0)
    back = (codes * scale + low).reshape(rows, width)
    return back if axis == 1 else back.T


@pytest.mark.slow
def test_the_bits_step_quotes_the_real_keys_errors_recomputed_without_the_core():
    from attn_core.pretrained import load_pretrained
    from explorer.probes.lab import split_tokens

    spec, text = opened("bits")
    lm = load_pretrained()
    ids = split_tokens(lm)[0][: chapter.KEY_TOKENS]
    with torch.inference_mode():
        _logits, _maps = lm(torch.tensor([ids]), cache := lm.new_cache())
    keys = cache.layers[chapter.KEY_LAYER].k[0].float()  # [G, T, D]
    errors, norms = {}, {}
    for layout, axis in (("token", 1), ("channel", 0)):
        back = torch.stack([own_quantisation(k, chapter.KEY_BITS, chapter.KEY_GROUP, axis) for k in keys])
        errors[layout] = (back - keys).pow(2).mean(dim=1).sqrt()  # [G, D]
        norms[layout] = float((back - keys).norm() / keys.norm())
    head = int(keys.pow(2).mean(dim=1).sqrt().max(dim=1).values.argmax())
    bars = {t["name"]: t for t in spec["data"] if t["type"] == "bar"}
    assert np.allclose(bars["error, per token"]["y"], errors["token"][head].numpy(), rtol=1e-3, atol=1e-4)
    assert np.allclose(bars["error, per channel"]["y"], errors["channel"][head].numpy(), rtol=1e-3, atol=1e-4)
    assert f"error {percent(norms['token'])} of the keys per token, {percent(norms['channel'])} per channel" in text
    assert norms["channel"] < norms["token"] / 2, "per channel keeps the outlier channels' scales to themselves"
    # the head the chart shows, its own figures said beside it (issue #47: only the whole layer's were)
    shown = {
        layout: percent(float((back - keys[head]).norm() / keys[head].norm()))
        for layout, axis in (("token", 1), ("channel", 0))
        for back in [own_quantisation(keys[head], chapter.KEY_BITS, chapter.KEY_GROUP, axis)]
    }
    assert f"KV head {head}: {shown['token']} error per token, {shown['channel']} per channel" in text


def test_the_choosing_step_compares_the_models_made_for_128k():
    spec, text = opened("choose2026")
    made_for = {name for name, config in PUBLISHED.items() if (context_length(config) or T) >= T}
    markers = [t for t in spec["data"] if t.get("mode") == "markers"]  # a dot per model, in its legend group
    assert all(t["legendgroup"] == t["text"][0] for t in markers)
    assert {t["text"][0] for t in markers} == made_for
    at = {t["text"][0]: t["y"][0] for t in markers}
    largest, smallest = max(at, key=at.__getitem__), min(at, key=at.__getitem__)
    for figure in (largest, smallest, format_bytes(at[largest]), format_bytes(at[smallest])):
        assert figure in text, figure
    assert math.isclose(at["DeepSeek-V3.2"], 61 * (512 + 64 + 128) * T * BF16)


def test_the_choosing_step_quotes_the_labs_least_hurt_cut_within_its_budget():
    from explorer.lab import link as lab_link
    from explorer.lab.axes_points import load_points, within_budget
    from explorer.lab.axes_text import point_name

    _spec, text = opened("choose2026")
    context, budget = lab_link.AXES_CONTEXT.default, lab_link.AXES_BUDGET.default
    points = load_points()
    best = within_budget(points, context, budget / 100).best
    assert best is not None
    # independently: the least-hurt design whose whole cache at the context is within the budget's share
    limit = budget / 100 * next(p for p in points if p.key == "original").cache_nbytes[context]
    assert best.times_original == min(p.times_original for p in points if p.cache_nbytes[context] <= limit)
    assert f"the cut that hurts least is {point_name(best)}" in text
    assert f"×{best.times_original:,.2f} the original's perplexity" in text
    assert f"lab_axes_context={context}&lab_budget={budget}" in text


def test_the_window_table_names_settings_it_did_not_measure():
    from explorer.lab.window_table import load_window_table

    table = load_window_table()
    assert table.windows() == [64, 128, 256, 512]
    with pytest.raises(ValueError, match="window=100, sink_tokens=0"):
        table.row(100)


def test_the_window_table_refuses_a_file_of_another_shape(tmp_path):
    from explorer.lab.window_table import load_window_table

    other = tmp_path / "window_table.json"
    other.write_text(json.dumps({"rows": [{"key": "original"}]}), encoding="utf-8")
    with pytest.raises(ValueError, match="not a window table"):
        load_window_table(other)


@pytest.mark.parametrize(("layer", "tokens", "message"), [(30, 64, "layer=30"), (0, 40, "40 tokens")])
def test_key_bits_names_a_layer_or_length_it_cannot_use(layer, tokens, message):
    from attn_core.pretrained import load_pretrained
    from explorer.probes.key_bits import key_bits

    lm = load_pretrained()
    with pytest.raises(ValueError, match=message):
        key_bits(lm, list(range(1, tokens + 1)), layer)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_window_steps_gif_runs_through_the_contexts_the_chart_draws(lang, media):  # noqa: F811
    from PIL import Image, ImageChops

    from explorer import gif

    at = open_page("lesson", {"step": str(number_of("window")), "lang": lang})
    (button,) = [b for b in at.get("download_button") if b.proto.id and "gif_" in b.proto.id]
    image = Image.open(io.BytesIO(media.content(button)))
    model = next(m for m in chapter.axes_computed.cached_published()[0] if m.name == chapter.WINDOW_MODEL)
    assert image.n_frames == sum(1 for t in model.tokens if t <= T), "a frame per length the chart draws, to 128K"
    assert image.size == gif.SIZE
    first = image.convert("RGB")
    image.seek(image.n_frames - 1)
    assert ImageChops.difference(first, image.convert("RGB")).getbbox() is not None


def test_the_sparse_step_shows_v3s_read_line_on_its_held_line_and_says_it_reads_all_it_holds():
    """V3's two lines are the same numbers: the read line is drawn dashed and narrower on a wide held band, labelled,
    and the caption says so; V3.2, which reads less than it holds, gets no such label."""
    spec, text = opened("sparse")
    held, read = trace(spec, "DeepSeek-V3: held"), trace(spec, "DeepSeek-V3: read by a step")
    assert held["y"] == read["y"], "V3 reads every byte it holds"
    assert read["line"]["dash"] != held["line"]["dash"]
    assert read["line"]["width"] < held["line"]["width"], "the read line runs inside the held one, both seen"
    labels = [a["text"] for a in spec["layout"]["annotations"]]
    assert labels == ["DeepSeek-V3: reads all it holds"]
    assert "DeepSeek-V3 reads all it holds" in text
    assert "DeepSeek-V3.2 reads all it holds" not in text


@pytest.mark.parametrize("key", ["sparse", "compressed"])
def test_the_reads_all_labels_pointer_crosses_no_other_models_line(key):
    """Issue 47: the label stood clear of every line but its pointer crossed V3.2's read line. Along the pointer, in
    the chart's log-log coordinates, every other model's line (its points joined straight, np.interp) stays on one
    side, and the label's row is under or over every line."""
    spec, _text = opened(key)
    (label,) = spec["layout"]["annotations"]
    lines = [t for t in spec["data"] if t.get("mode") == "lines" and t["line"]["color"] != label["arrowcolor"]]
    xs = np.linspace(label["ax"], label["x"], 400)
    ys = np.linspace(label["ay"], label["y"], 400)
    for line in lines:
        other = np.interp(xs, np.log10(line["x"]), np.log10(line["y"]), left=np.nan, right=np.nan)
        seen = ~np.isnan(other)
        assert len(set(np.sign(ys[seen] - other[seen]))) == 1, f"the pointer crosses {line['name']}"
        assert all(np.sign(label["ay"] - np.log10(line["y"])) == np.sign(label["ay"] - label["y"]))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_compressed_steps_gif_adds_an_entry_every_m_tokens_from_the_cores_cache(lang, media):  # noqa: F811
    """A frame per cache length the core measured, each drawn from that cache: V4-Flash's CSA layer makes one entry
    per 4 tokens (the core's cache says so at every length), and the frames change as they arrive."""
    from PIL import Image, ImageChops

    from explorer import gif

    config, caches = chapter.compressed_caches()
    assert config.kind == "csa"
    assert config.compress_rate == 4
    for cache in caches:
        assert cache.shapes()["entries"][2] == cache.seq_len // 4
    at = open_page("lesson", {"step": str(number_of("compressed")), "lang": lang})
    (button,) = [b for b in at.get("download_button") if b.proto.id and "gif_" in b.proto.id]
    image = Image.open(io.BytesIO(media.content(button)))
    assert image.n_frames == len(caches)
    assert image.size == gif.SIZE
    first = image.convert("RGB")
    image.seek(image.n_frames - 1)
    assert ImageChops.difference(first, image.convert("RGB")).getbbox() is not None
