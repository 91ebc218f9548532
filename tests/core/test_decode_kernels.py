"""The kernels the core's attention runs on, checked on a CPU: every fused call made with cuDNN attention excluded
(issue 46: on CUDA it builds a new plan for every new key length), and every published layer kind in bfloat16 and
float16 as close to float32 as the dtype allows."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.backends import cuda as cuda_backends

from attn_core.attend import sdpa

from .published_small import CASE_IDS, LAYER_KINDS, prefill_then_decode, small_layer

# Kinds whose decoding step reaches torch's fused kernel. The others score with explicit products (no plan to
# build): gpt-oss's sinks, MLA's and DSA's absorbed step (keys wider than values), and the linear layers' state.
FUSED_DECODE = {
    "Llama 3 8B:full",
    "Mistral 7B:sliding",
    "Qwen3-8B:full",
    "Gemma 3 27B:sliding",
    "Gemma 3 27B:full",
    "Qwen3-Next-80B-A3B:full",
    "DeepSeek-V4-Flash:sliding",
    "DeepSeek-V4-Flash:csa",
    "DeepSeek-V4-Flash:hca",
    "SmolLM2-135M:full",
}


def _tokens(kind: str) -> int:
    return 140 if kind == "hca" else 20  # HCA pools one entry per 128 tokens


@pytest.fixture
def cudnn_flags(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether cuDNN attention was enabled at each call of torch's scaled_dot_product_attention, in order."""
    seen: list[bool] = []
    original = F.scaled_dot_product_attention

    def recorded(*args: object, **kwargs: object) -> torch.Tensor:
        seen.append(cuda_backends.cudnn_sdp_enabled())
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(F, "scaled_dot_product_attention", recorded)
    return seen


@pytest.mark.parametrize(("name", "kind", "index"), LAYER_KINDS, ids=CASE_IDS)
def test_every_fused_call_excludes_cudnn(name: str, kind: str, index: int, cudnn_flags: list[bool]) -> None:
    layer, x = small_layer(name, index), torch.randn(1, _tokens(kind), 64)
    prompt = x.shape[1] - 2
    with torch.no_grad():
        cache = layer.new_cache(1)
        layer(x[:, :prompt], cache=cache)
        before_decode = len(cudnn_flags)
        layer(x[:, prompt : prompt + 1], cache=cache)
    assert not any(cudnn_flags)
    assert (len(cudnn_flags) > before_decode) == (f"{name}:{kind}" in FUSED_DECODE)
    assert cuda_backends.cudnn_sdp_enabled()  # the caller's setting is back


def test_sdpa_puts_back_the_callers_setting_even_when_torch_refuses() -> None:
    q = torch.randn(1, 2, 3, 4)
    cuda_backends.enable_cudnn_sdp(False)
    try:
        sdpa(q, q, q, scale=0.5)
        assert not cuda_backends.cudnn_sdp_enabled()
    finally:
        cuda_backends.enable_cudnn_sdp(True)
    with pytest.raises(RuntimeError):
        sdpa(q, q[..., :3], q, scale=0.5)  # keys narrower than queries
    assert cuda_backends.cudnn_sdp_enabled()


def test_sdpa_gives_torchs_numbers() -> None:
    q, k, v = torch.randn(2, 4, 5, 8), torch.randn(2, 2, 7, 8), torch.randn(2, 2, 7, 8)
    mask = torch.rand(1, 1, 5, 7) > 0.3
    mask[..., 0] = True
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.3, enable_gqa=True)
    assert torch.equal(sdpa(q, k, v, attn_mask=mask, scale=0.3, enable_gqa=True), expected)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize(("name", "kind", "index"), LAYER_KINDS, ids=CASE_IDS)
def test_layer_in_half_precision_is_float32_within_the_dtypes_rounding(
    name: str, kind: str, index: int, dtype: torch.dtype
) -> None:
    """build_layer(dtype=...) gives the float32 layer's weights rounded: a prefill and cached decoding steps land
    within 8 units of the dtype's rounding (eps) of the float32 output's largest value (measured: <= 5)."""
    x = torch.randn(2, _tokens(kind), 64, generator=torch.Generator().manual_seed(1))
    prompt = x.shape[1] - 8
    with torch.no_grad():
        expected = prefill_then_decode(small_layer(name, index), x, prompt)
        layer = small_layer(name, index, dtype=dtype)
        assert all(p.dtype == dtype for p in layer.parameters())
        out = prefill_then_decode(layer, x.to(dtype), prompt)
    assert out.dtype == dtype
    tolerance = 8 * torch.finfo(dtype).eps * expected.abs().max().item()
    assert (out.float() - expected).abs().max().item() <= tolerance
