"""A quantised KV cache (KIVI's layout) holds packed codes, a scale and zero point per group and an exact window, and
knows their bytes to the byte."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from attn_core import AttentionConfig, KVCache, build_attention
from attn_core.quant import CacheBits, QuantizedKVCache, cache_bytes_formula, fake_quantize, pack, unpack

CFG = AttentionConfig("gqa", d_model=128, n_heads=8, n_kv_heads=2)  # head width 16
WIDTH = CFG.head_dim


def generator(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def reference_fake_quantize(x: torch.Tensor, bits: int, group: int, layout: str) -> torch.Tensor:
    """Min/max asymmetric quantisation written out group by group: scale = (max - min) / (2^b - 1), zero = min,
    code = round((x - min) / scale) in 0 .. 2^b - 1, read back code * scale + min."""
    out = torch.empty_like(x)
    batch, heads, tokens, width = x.shape
    for b in range(batch):
        for h in range(heads):
            if layout == "token":  # groups of `group` channels of one token
                cells = [(t, slice(c, c + group)) for t in range(tokens) for c in range(0, width, group)]
            else:  # groups of `group` tokens of one channel
                cells = [(slice(t, t + group), c) for t in range(0, tokens, group) for c in range(width)]
            for rows, cols in cells:
                values = x[b, h, rows, cols]
                low, high = values.min(), values.max()
                scale = (high - low) / (2**bits - 1)
                codes = (
                    torch.zeros_like(values) if scale == 0 else ((values - low) / scale).round().clamp(0, 2**bits - 1)
                )
                out[b, h, rows, cols] = codes * scale + low
    return out


def filled(bits: CacheBits, tokens: int, chunks: tuple[int, ...] = (), batch: int = 1, dtype=torch.float32):
    """A cache fed random keys and values in chunks (the rest of `tokens` one at a time), and what it was fed."""
    cache = QuantizedKVCache(batch, CFG.n_kv_heads, WIDTH, bits, dtype=dtype, device=None)
    k = torch.randn(batch, CFG.n_kv_heads, tokens, WIDTH, generator=generator(1)).to(dtype)
    v = torch.randn(batch, CFG.n_kv_heads, tokens, WIDTH, generator=generator(2)).to(dtype)
    sizes = list(chunks) + [1] * (tokens - sum(chunks))
    start = 0
    for size in sizes:
        cache.append(k[:, :, start : start + size], v[:, :, start : start + size])
        start += size
    return cache, k, v


@pytest.mark.parametrize("layout", ["token", "channel"])
@pytest.mark.parametrize("bits", [2, 4, 8])
def test_quantise_then_read_back_equals_min_max_quantisation_per_group(bits, layout):
    x = torch.randn(2, 3, 16, WIDTH, generator=generator()) * 3
    spec = CacheBits(bits, group_size=4, residual=0, keys=layout)
    assert torch.equal(fake_quantize(x, spec, layout), reference_fake_quantize(x, bits, 4, layout))


def test_a_constant_group_reads_back_exactly():
    x = torch.full((1, 1, 4, WIDTH), 0.3)
    assert torch.equal(fake_quantize(x, CacheBits(2, 4, 0, "channel"), "channel"), x)


@pytest.mark.parametrize("bits", [2, 4, 8])
def test_packing_round_trips(bits):
    codes = torch.randint(0, 2**bits, (3, 5, 16), generator=generator(), dtype=torch.uint8)
    packed = pack(codes, bits)
    assert packed.dtype == torch.uint8
    assert packed.shape == (3, 5, 16 * bits // 8)
    assert torch.equal(unpack(packed, bits), codes)


def test_two_bit_codes_fill_a_byte_from_its_low_bits():
    codes = torch.tensor([1, 2, 3, 0], dtype=torch.uint8)
    assert pack(codes, 2).tolist() == [1 + (2 << 2) + (3 << 4)]


@pytest.mark.parametrize("keys", ["channel", "token"])
@pytest.mark.parametrize("bits", [2, 4, 8])
def test_cache_holds_the_reference_codes_of_every_token_older_than_its_window(bits, keys):
    spec = CacheBits(bits, group_size=4, residual=6, keys=keys)
    cache, k, v = filled(spec, 31, chunks=(9,))
    for name, x in (("k", k), ("v", v)):
        part = cache.parts[name]
        layout = spec.layout(name)
        quantised = spec.quantized_tokens(31, layout)
        assert part.quantized == quantised > 0
        expected = reference_fake_quantize(x[:, :, :quantised], bits, 4, layout)
        assert torch.equal(part.dequantized(), expected)


@pytest.mark.parametrize("keys", ["channel", "token"])
def test_the_newest_residual_tokens_are_read_exactly(keys):
    spec = CacheBits(2, group_size=4, residual=6, keys=keys)
    cache, k, v = filled(spec, 30, chunks=(11,))
    new_k, new_v = torch.randn(2, 1, CFG.n_kv_heads, 1, WIDTH, generator=generator(5))
    keys_read, values_read = cache.append(new_k, new_v)
    assert torch.equal(keys_read[:, :, -7:], torch.cat((k[:, :, -6:], new_k), dim=2))
    assert torch.equal(values_read[:, :, -7:], torch.cat((v[:, :, -6:], new_v), dim=2))
    assert not torch.equal(keys_read[:, :, :-7], k[:, :, : keys_read.shape[2] - 7])  # the older ones are not


def test_keys_per_channel_wait_for_a_whole_group_and_values_leave_one_by_one():
    spec = CacheBits(4, group_size=4, residual=6, keys="channel")
    held = []
    for tokens in range(6, 16):
        cache, _, _ = filled(spec, tokens)
        held.append((cache.parts["k"].exact.shape[2], cache.parts["v"].exact.shape[2]))
    # keys: 6 + 0..3 exact, a group of 4 quantised when 4 have left the window; values: always the last 6
    assert held == [(6, 6), (7, 6), (8, 6), (9, 6), (6, 6), (7, 6), (8, 6), (9, 6), (6, 6), (7, 6)]


def formula(tokens: int, batch: int, element: int, bits: int, group: int, residual: int, keys: str) -> int:
    """The docstring's formula, written out: per part, packed codes + scale and zero per group + exact window."""
    total = 0
    for layout in (keys, "token"):
        block = group if layout == "channel" else 1
        quantised = block * (max(tokens - residual, 0) // block)
        groups = quantised * WIDTH // group
        per_head = quantised * WIDTH * bits // 8 + 2 * groups * element + (tokens - quantised) * WIDTH * element
        total += batch * CFG.n_kv_heads * per_head
    return total


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("keys", ["channel", "token"])
@pytest.mark.parametrize("bits", [2, 4, 8])
@pytest.mark.parametrize("residual", [0, 5, 8])
@pytest.mark.parametrize("tokens", [0, 3, 8, 21, 40])
def test_nbytes_is_the_formula(tokens, residual, bits, keys, dtype):
    spec = CacheBits(bits, group_size=4, residual=residual, keys=keys)
    cache, _, _ = filled(spec, tokens, chunks=(min(tokens, 7),), batch=2, dtype=dtype)
    element = torch.empty((), dtype=dtype).element_size()
    expected = formula(tokens, 2, element, bits, 4, residual, keys)
    assert cache.nbytes == expected == cache_bytes_formula(tokens, 2, CFG.n_kv_heads, WIDTH, element, spec)


def test_meets_the_cores_cache_contract():
    cache, _, _ = filled(CacheBits(4, 4, 4), 9)
    assert isinstance(cache, KVCache)
    assert cache.seq_len == 9
    assert cache.capacity_nbytes >= cache.nbytes


def test_codes_are_uint8_and_scales_are_in_the_caches_dtype():
    cache, _, _ = filled(CacheBits(4, 4, 4, "channel"), 20, dtype=torch.bfloat16)
    part = cache.parts["k"]
    assert part.packed.view().dtype == torch.uint8
    assert part.scale.view().dtype == torch.bfloat16
    assert cache.shapes()["k_packed"] == (1, CFG.n_kv_heads, 16, WIDTH // 2)  # two 4-bit codes a byte
    assert cache.shapes()["k_scale"] == (1, CFG.n_kv_heads, 4, WIDTH)  # per channel, per 4 tokens


def test_a_prefill_of_a_million_tokens_on_meta_holds_the_formulas_bytes():
    spec = CacheBits(2, 32, 128, "channel")
    layer = build_attention(AttentionConfig("gqa", d_model=4096, n_heads=32, n_kv_heads=8), device="meta")
    cache = layer.new_cache(bits=2, group_size=32, residual=128)
    cache.append(*layer.project_kv(torch.empty(1, 1 << 20, 4096, device="meta")))
    assert cache.nbytes == cache_bytes_formula(1 << 20, 1, 8, 128, 4, spec)


def test_a_decoding_step_reads_what_was_held_and_its_own_token_exact():
    cache, _, _ = filled(CacheBits(4, 4, 6, "channel"), 25)
    held = cache.nbytes
    cache.append(*torch.randn(2, 1, CFG.n_kv_heads, 1, WIDTH))
    assert cache.read_nbytes == held + 2 * CFG.n_kv_heads * WIDTH * 4


def decode_outputs(bits: int | None, keys: str = "channel", prompt: int = 8, steps: int = 40) -> torch.Tensor:
    """A layer's outputs for `steps` decoding steps after a prompt, with a float or a quantised cache."""
    layer = build_attention(CFG, seed=0)
    x = torch.randn(1, prompt + steps, CFG.d_model, generator=generator(3))
    cache = layer.new_cache() if bits is None else layer.new_cache(bits=bits, group_size=8, residual=4, keys=keys)
    with torch.no_grad():
        layer(x[:, :prompt], cache=cache)
        return torch.cat([layer(x[:, t : t + 1], cache=cache)[0] for t in range(prompt, prompt + steps)], dim=1)


def test_eight_bit_decoding_stays_within_a_small_tolerance_of_the_float_cache():
    exact = decode_outputs(None)
    assert (decode_outputs(8) - exact).abs().max() < 2e-3 * exact.abs().max()


@pytest.mark.parametrize("keys", ["channel", "token"])
def test_decoding_error_grows_as_bits_fall(keys):
    exact = decode_outputs(None)
    errors = [float((decode_outputs(bits, keys) - exact).abs().mean()) for bits in (8, 4, 2)]
    assert errors[0] < errors[1] < errors[2]


def test_a_prompt_within_the_window_decodes_as_the_float_cache_does():
    exact = decode_outputs(None, prompt=2, steps=2)
    assert torch.allclose(decode_outputs(2, prompt=2, steps=2), exact, atol=1e-6)  # 4 tokens, all in the window


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"bits": 3}, "bits"),
        ({"bits": 16}, "bits"),
        ({"bits": 4, "group_size": 5, "keys": "token"}, "group_size"),
        ({"bits": 4, "group_size": 6}, "group_size"),  # values are per token: a group must tile the head width
        ({"bits": 4, "group_size": 0}, "group_size"),
        ({"bits": 4, "residual": -1}, "residual"),
        ({"bits": 4, "keys": "row"}, "keys"),
    ],
)
def test_bad_arguments_raise_a_value_error_naming_the_argument(options, named):
    with pytest.raises(ValueError, match=named):
        build_attention(CFG).new_cache(**options)


@pytest.mark.slow  # importing optimum-quanto registers its torch ops: seconds
def test_matches_optimum_quanto_the_backend_of_hf_quantized_cache(monkeypatch):
    """HF transformers' QuantizedCache quantises with optimum-quanto's MaxOptimizer and quantize_weight: per token
    along axis 0 with groups of the head width; per channel is the same on the transposed keys (KIVI)."""
    quanto = pytest.importorskip("optimum.quanto")
    from optimum.quanto.library.extensions import cpp

    # quanto unpacks its 4- and 2-bit codes on the CPU with a C++ extension it compiles on first use, into its own
    # install (150 s in a fresh environment): here its loaded library is this test's own unpacking, of the layout
    # quanto documents (a byte's low bits hold the first value), so quanto's quantisation is what is compared
    monkeypatch.setattr(cpp.ext, "_lib", SimpleNamespace(unpack=codes_of))
    x = torch.randn(2, 3, 64, 64, generator=generator())
    for bits, qtype in ((4, quanto.qint4), (2, quanto.qint2)):
        for layout in ("token", "channel"):
            t = x if layout == "token" else x.transpose(2, 3).contiguous()
            scale, shift = quanto.MaxOptimizer()(t, qtype, 0, 32)
            theirs = quanto.quantize_weight(t, qtype, 0, scale, shift, 32).dequantize()
            theirs = theirs if layout == "token" else theirs.transpose(2, 3)
            assert torch.equal(fake_quantize(x, CacheBits(bits, 32, 0, layout), layout), theirs)


def codes_of(packed: torch.Tensor, bits: int) -> torch.Tensor:
    """Each byte's 8 // bits codes, lowest bits first, the i-th codes of all bytes stacked along the first axis."""
    mask = (1 << bits) - 1
    return torch.cat([(packed >> (bits * i)) & mask for i in range(8 // bits)]).to(torch.uint8)


# --- layers that read every position as a decoding step through the quantised cache would (pretrained.cache_bits) --
MLA = AttentionConfig(
    "mla", d_model=32, n_heads=4, kv_lora_rank=12, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=6
)


def quantised_layer(cfg: AttentionConfig, spec: CacheBits):
    from attn_core.pretrained.cache_bits import QuantizedCacheAttention, QuantizedCacheLatentAttention

    kind = QuantizedCacheLatentAttention if cfg.variant == "mla" else QuantizedCacheAttention
    layer = kind(cfg, spec)
    layer.load_state_dict(build_attention(cfg, seed=0).state_dict())
    return layer


@pytest.mark.parametrize("keys", ["channel", "token"])
@pytest.mark.parametrize("cfg", [CFG, MLA], ids=["gqa", "mla"])
def test_chunks_and_decoding_steps_through_the_cache_equal_one_forward_without_it(cfg, keys):
    spec = CacheBits(2, group_size=4, residual=3, keys=keys)
    layer = quantised_layer(cfg, spec)
    x = torch.randn(1, 40, cfg.d_model, generator=generator(4))
    cache = layer.new_cache()
    with torch.no_grad():
        whole, _ = layer(x)
        parts = [layer(x[:, :9], cache=cache)[0], layer(x[:, 9:20], cache=cache)[0]]
        parts += [layer(x[:, t : t + 1], cache=cache)[0] for t in range(20, 40)]
    assert cache.part.quantized if cfg.variant == "mla" else cache.parts["v"].quantized  # some were quantised
    torch.testing.assert_close(torch.cat(parts, dim=1), whole, atol=1e-5, rtol=0)


@pytest.mark.parametrize("cfg", [CFG, MLA], ids=["gqa", "mla"])
def test_a_position_reads_exactly_what_its_decoding_step_reads(cfg):
    """Weights per key from one forward equal each decoding step's (the copies folded back into one per key)."""
    layer = quantised_layer(cfg, CacheBits(2, group_size=4, residual=3))
    x = torch.randn(1, 16, cfg.d_model, generator=generator(6))
    cache = layer.new_cache()
    with torch.no_grad():
        _, whole = layer(x, return_weights=True)
        layer(x[:, :1], cache=cache)
        for t in range(1, 16):
            _, step = layer(x[:, t : t + 1], cache=cache, return_weights=True)
            torch.testing.assert_close(step[:, :, 0], whole[:, :, t, : t + 1], atol=1e-6, rtol=0)


@pytest.mark.parametrize("cfg", [CFG, MLA], ids=["gqa", "mla"])
def test_a_window_longer_than_the_text_changes_nothing(cfg):
    layer = quantised_layer(cfg, CacheBits(2, group_size=4, residual=64))
    plain = build_attention(cfg, seed=0)
    x = torch.randn(2, 20, cfg.d_model, generator=generator(7))
    with torch.no_grad():
        torch.testing.assert_close(layer(x)[0], plain(x)[0], atol=1e-6, rtol=0)
