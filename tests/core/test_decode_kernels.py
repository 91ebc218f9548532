"""The kernels the core's attention runs on, checked on a CPU: every fused call made with cuDNN attention excluded
(issue 46: on CUDA it builds a new plan for every new key length), and every published layer kind in bfloat16 and
float16 as close to float32 as the dtype allows."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.backends import cuda as cuda_backends
from torch.utils._python_dispatch import TorchDispatchMode

from attn_core import compressed
from attn_core.attend import sdpa
from attn_core.compressed import QUERY_BLOCK_ELEMENTS
from attn_core.hf import build_layer
from attn_core.published import PUBLISHED, published_config
from benchmarks.published_small import CASE_IDS, LAYER_KINDS, SMALLER, prefill_then_decode, small_layer

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
    "MiniMax-M1:full",
    "MiniMax-M2:full",
    "Gemma 3n E4B:sliding",
    "Gemma 3n E4B:full",
    "Gemma 4 31B:sliding",
    "Gemma 4 31B:full",
    "Llama 4 Scout:chunked",
    "Llama 4 Scout:nope",
    "SmolLM3-3B:full",
    "SmolLM3-3B:nope",
    "Nemotron 3 Nano 30B-A3B:full",
}


def test_every_published_model_has_a_small_version() -> None:
    missing = sorted(set(PUBLISHED) - set(SMALLER))
    assert not missing, f"add {missing}'s small fields to benchmarks/published_small.SMALLER"


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


# --- DeepSeek-V4's prompt memory: linear in the prompt's length --------------------------------------------------------


class _LargestRequest(TorchDispatchMode):
    """The largest tensor any torch operation creates while active, in bytes (meta tensors too: their shapes)."""

    def __init__(self) -> None:
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        out = func(*args, **(kwargs or {}))
        for tensor in out if isinstance(out, (tuple, list)) else [out]:
            if isinstance(tensor, torch.Tensor):
                self.largest = max(self.largest, tensor.numel() * tensor.element_size())
        return out


def _largest_request_filling(layer: torch.nn.Module, batch: int, tokens: int, chunk: int) -> int:
    cache, record = layer.new_cache(batch), _LargestRequest()
    with torch.no_grad(), record:
        for _ in range(0, tokens, chunk):
            layer(torch.empty(batch, chunk, layer.cfg.d_model, device="meta", dtype=torch.bfloat16), cache=cache)
    return record.largest


@pytest.mark.parametrize("index", [2, 3], ids=["csa", "hca"])
def test_v4_prompt_fills_its_cache_without_a_request_growing_with_its_length(index: int) -> None:
    """The published layer, B=32, on the meta device: doubling the prompt leaves the largest single request where it
    was, within one query block's budget (1 GB; 70 GB and 38 GB at 8k in 2,048-token chunks before blocking)."""
    layer = build_layer(published_config("DeepSeek-V4-Flash"), index, device="meta", dtype=torch.bfloat16)
    shorter, longer = (_largest_request_filling(layer, 32, tokens, 512) for tokens in (2048, 4096))
    assert longer <= shorter <= 4 * QUERY_BLOCK_ELEMENTS


@pytest.mark.parametrize("kind", ["csa", "hca"])
def test_v4_query_blocks_give_the_one_block_numbers(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    name, index = "DeepSeek-V4-Flash", 2 if kind == "csa" else 3
    x = torch.randn(2, 150, 64, generator=torch.Generator().manual_seed(2))
    layer = small_layer(name, index)
    with torch.no_grad():
        whole = layer(x, cache=layer.new_cache(2), return_weights=True)
        fused = layer(x, cache=layer.new_cache(2))[0]
        monkeypatch.setattr(compressed, "QUERY_BLOCK_ELEMENTS", 2 * 4 * 200)  # a few queries a block
        assert layer.query_rows(2, 200) < 10
        blocked = layer(x, cache=layer.new_cache(2), return_weights=True)
        blocked_fused = layer(x, cache=layer.new_cache(2))[0]
    torch.testing.assert_close(blocked[0], whole[0], rtol=0, atol=1e-6)
    torch.testing.assert_close(blocked[1], whole[1], rtol=0, atol=1e-6)
    torch.testing.assert_close(blocked_fused, fused, rtol=0, atol=1e-6)
