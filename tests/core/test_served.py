"""Caches as served (attn_core.served, ModelDescription's storage="served"), against closed forms written from the
serving code's own descriptions: FlashMLA's 656 B latent, DeepSeek's FP8 and FP4 indexer keys, the engines' 584 B V4
entry, vLLM's bf16 linear states, and bf16 as HF holds it for every other model."""

import pytest

from attn_core.hf import describe_model
from attn_core.published import PUBLISHED, published_config
from attn_core.served import flashmla_latent, fp4_index_key, fp8_index_key, v4_entry

MILLION = 1 << 20
BF16 = 2


def model(name):
    return describe_model(published_config(name))


def test_the_formats_weigh_what_their_sources_say():
    assert flashmla_latent(512, 64).nbytes == 512 * 1 + 4 * 4 + 64 * 2 == 656
    assert fp8_index_key(128).nbytes == 128 * 1 + 4 == 132
    # V4: 448 FP8 + 64 bf16 + 7 UE8M0 scales (one per 64 FP8 numbers) = 583, padded to 8 bytes
    assert v4_entry(512, 64).nbytes == 584
    assert fp4_index_key(128).nbytes == 128 // 2 + 128 // 32 == 68


@pytest.mark.parametrize("tokens", [1, 2048, 2049, 131072, MILLION])
def test_v32_as_served_holds_61_flashmla_latents_and_fp8_index_keys_per_token(tokens):
    assert model("DeepSeek-V3.2").cache_bytes(tokens=tokens, batch=3, storage="served") == 61 * (656 + 132) * tokens * 3


@pytest.mark.parametrize("tokens", [1, 2048, 2049, 131072])
def test_v32_as_served_reads_every_index_key_and_the_top_k_latents(tokens):
    read = 61 * (132 * tokens + 656 * min(tokens, 2048))
    assert model("DeepSeek-V3.2").read_bytes(tokens=tokens, storage="served") == read


def test_v32_reads_its_index_keys_at_2048_tokens_or_fewer_as_deepseeks_reference_does():
    """DeepSeek's reference (and HF's module) score every indexer key whatever T; bf16: (d_I + d_c + d_h^R) · T."""
    assert model("DeepSeek-V3.2").read_bytes(tokens=2048) == 61 * (128 + 512 + 64) * 2048 * BF16


def v4_flash_served(tokens: int) -> int:
    """V4-Flash at T a multiple of 128: every layer's window of W − 1 = 127 keys at 584 B; its 20 HCA layers one
    584 B entry per 128 tokens; its 21 CSA layers one 584 B entry and one 68 B indexer key per 4 tokens, and the last
    finished window's kv and gate halves (4 rows of 512 + 128 numbers each) in float32."""
    window = 43 * 127 * 584
    hca = 20 * (tokens // 128) * 584
    csa = 21 * ((tokens // 4) * (584 + 68) + 2 * 4 * (512 + 128) * 4)
    return window + hca + csa


@pytest.mark.parametrize("tokens", [4096, MILLION])
def test_v4_flash_as_served_holds_the_engines_entries(tokens):
    assert model("DeepSeek-V4-Flash").cache_bytes(tokens=tokens, storage="served") == v4_flash_served(tokens)


def test_v4_flash_at_1m_tokens_is_about_7_percent_of_v32_as_served():
    ratio = model("DeepSeek-V4-Flash").cache_bytes(tokens=MILLION, storage="served") / (61 * 788 * MILLION)
    assert 0.065 <= ratio <= 0.08


def test_v4_flash_at_1m_tokens_is_about_2_percent_of_a_bf16_gqa8_cache_of_its_43_layers():
    """GQA-8 as DeepSeek compares it: 8 KV heads of width 128, keys and values in bf16, on each of the 43 layers."""
    gqa8 = 43 * 2 * 8 * 128 * BF16 * MILLION
    ratio = model("DeepSeek-V4-Flash").cache_bytes(tokens=MILLION, storage="served") / gqa8
    assert 0.017 <= ratio <= 0.023


def test_linear_states_as_served_are_bf16():
    """Qwen3-Next: 36 Gated DeltaNet layers of 32 value heads' 128 x 128 state and 3 conv inputs of 2·16·128 + 32·128
    channels, all bf16; its 12 full layers 2 KV heads of 256, bf16."""
    linear = 36 * (32 * 128 * 128 + 3 * (2 * 16 * 128 + 32 * 128)) * BF16
    full = 12 * 2 * 2 * 256 * BF16 * 4096
    assert model("Qwen3-Next-80B-A3B").cache_bytes(tokens=4096, storage="served") == linear + full


SERVED_AS_HELD = ["Llama 3 8B", "Mistral 7B", "Qwen3-8B", "Gemma 3 27B", "gpt-oss-120b", "DeepSeek-V3", "SmolLM2-135M"]


@pytest.mark.parametrize("name", SERVED_AS_HELD)
def test_a_model_served_in_bf16_equals_its_reference(name):
    described = model(name)
    for tokens in (1, 5000, MILLION):
        assert described.cache_bytes(tokens=tokens, storage="served") == described.cache_bytes(tokens=tokens)
        assert described.read_bytes(tokens=tokens, storage="served") == described.read_bytes(tokens=tokens)
    assert "bf16" in described.served_source


def test_llama_3_8b_as_served_is_its_bf16_keys_and_values():
    assert model("Llama 3 8B").cache_bytes(tokens=8192, storage="served") == 32 * 2 * 8 * 128 * BF16 * 8192


def test_the_reference_storage_is_the_default_and_unchanged():
    """V3.2 and V4-Flash as HF's modules hold them, in bf16, whatever the served formats."""
    v32, v4 = model("DeepSeek-V3.2"), model("DeepSeek-V4-Flash")
    assert v32.cache_bytes(tokens=MILLION) == v32.cache_bytes(tokens=MILLION, storage="reference")
    assert v32.cache_bytes(tokens=MILLION) == 61 * (512 + 64 + 128) * BF16 * MILLION
    assert v4.cache_bytes(tokens=MILLION) == v4.formula_bytes(tokens=MILLION)


def test_each_model_names_where_its_served_formats_come_from():
    assert "FlashMLA" in model("DeepSeek-V3.2").served_source
    assert "fp4_act_quant" in model("DeepSeek-V4-Flash").served_source
    assert "vLLM" in model("Kimi Linear 48B-A3B").served_source
    assert all(model(name).served_source for name in PUBLISHED)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"storage": "fp8"}, "storage"), ({"storage": "served", "dtype": "float32"}, "dtype")],
)
def test_a_bad_storage_is_a_value_error_naming_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        model("Llama 3 8B").cache_bytes(tokens=10, **kwargs)
