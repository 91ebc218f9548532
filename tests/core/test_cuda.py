"""Every published layer kind on CUDA in bfloat16 and float16: a prefill and cached decoding steps against the
float32 CPU result, within the dtype's rounding (as tests/core/test_decode_kernels.py checks on the CPU)."""

from __future__ import annotations

import pytest
import torch

from benchmarks.published_small import CASE_IDS, LAYER_KINDS, prefill_then_decode, small_layer

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize(("name", "kind", "index"), LAYER_KINDS, ids=CASE_IDS)
def test_layer_on_cuda_gives_the_cpu_float32_numbers(name: str, kind: str, index: int, dtype: torch.dtype) -> None:
    tokens = 140 if kind == "hca" else 20
    x = torch.randn(2, tokens, 64, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = prefill_then_decode(small_layer(name, index), x, tokens - 8)
        layer = small_layer(name, index, dtype=dtype, device="cuda")
        assert all(p.device.type == "cuda" for p in layer.parameters())
        out = prefill_then_decode(layer, x.to("cuda", dtype), tokens - 8).float().cpu()
    tolerance = 8 * torch.finfo(dtype).eps * expected.abs().max().item()
    assert (out - expected).abs().max().item() <= tolerance
