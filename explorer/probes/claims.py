"""Published claims about KV caches, measured by the core at run time: each claim's own figure, and the same figure
from attn_core.describe_model on the configs it is about, in the storage the claim assumes.

Numbers only: a claim is a key (worded by the page, explorer/served.py), its source (a citation, shown as it is),
the published figure and the measured one; it reproduces when they agree to within its tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from attn_core import PUBLISHED, Storage, describe_model, published_config

ClaimKey = Literal["v2_gqa_groups", "v2_saving", "kimi_saving", "v4_vs_v32", "v4_vs_gqa8", "gemma3_local"]
MILLION = 1 << 20
V2_CACHE_BITS = 6  # DeepSeek-V2 §3.2.3: its deployed KV cache is quantised to 6 bits a number on average

# deepseek-ai/DeepSeek-V2 config.json, the fields attention reads: 60 layers of MLA (d_c 512, d_h^R 64), read by the
# deepseek_v3 reader (DeepseekV3Config has V2's attention fields and defaults)
DEEPSEEK_V2: dict[str, Any] = {
    "model_type": "deepseek_v3",
    "hidden_size": 5120,
    "num_attention_heads": 128,
    "num_hidden_layers": 60,
    "kv_lora_rank": 512,
    "q_lora_rank": 1536,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "max_position_embeddings": 163840,
}
# deepseek-ai/deepseek-llm-67b-base config.json (LlamaForCausalLM): 95 layers, 64 heads sharing 8 KV heads of 128
DEEPSEEK_67B: dict[str, Any] = {
    "model_type": "llama",
    "hidden_size": 8192,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "num_hidden_layers": 95,
    "max_position_embeddings": 4096,
}
# DeepSeek's GQA-8 baseline for V4: V4-Flash's 43 layers, 8 KV heads of the usual width 128 (its config's own
# head_dim, 512, is the shared K = V head's, not a GQA head's), keys and values in bf16
V4_GQA8_HEAD_DIM = 128


@dataclass(frozen=True)
class Claim:
    key: ClaimKey
    source: str  # a citation, shown as it is
    published: float
    measured: float
    unit: Literal["percent", "times"]
    storage: Storage  # the storage the measurement counts in
    tolerance: float  # relative, the claim's own precision: |measured - published| <= tolerance * published

    @property
    def reproduces(self) -> bool:
        return abs(self.measured - self.published) <= self.tolerance * self.published


def _held(config: dict[str, Any], tokens: int, storage: Storage = "reference") -> int:
    return describe_model(config).cache_bytes(tokens=tokens, storage=storage)


def deepseek_v2_claims(tokens: int = 4096) -> list[Claim]:
    """MLA caches what GQA with 2.25 groups would (d_c + d_h^R over 2 d_h), and 93.3 % less than DeepSeek 67B."""
    v2 = describe_model(DEEPSEEK_V2)
    per_token = v2.cache_bytes(tokens=1) // (2 * len(v2.layer_kinds))  # numbers one token leaves in one layer
    groups = per_token / (2 * DEEPSEEK_V2["v_head_dim"])
    six_bit = v2.cache_bytes(tokens=tokens) * V2_CACHE_BITS / 16
    saving = 100 * (1 - six_bit / _held(DEEPSEEK_67B, tokens))
    return [
        Claim("v2_gqa_groups", "arXiv:2405.04434, Table 1", 2.25, groups, "times", "reference", 0.01),
        Claim("v2_saving", "arXiv:2405.04434, §1 and §3.2.3", 93.3, saving, "percent", "served", 0.0005),
    ]


def kimi_claim(tokens: int = MILLION) -> Claim:
    """Kimi Linear's cache against the same model with MLA on every layer, at its 1M context."""
    config = published_config("Kimi Linear 48B-A3B")
    all_mla = published_config("Kimi Linear 48B-A3B")
    layers = all_mla["num_hidden_layers"]
    all_mla["linear_attn_config"] = {**all_mla["linear_attn_config"], "full_attn_layers": list(range(1, layers + 1))}
    all_mla["linear_attn_config"]["kda_layers"] = []
    saving = 100 * (1 - _held(config, tokens, "served") / _held(all_mla, tokens, "served"))
    return Claim("kimi_saving", "arXiv:2510.26692, abstract", 75.0, saving, "percent", "served", 0.05)


def deepseek_v4_claims(tokens: int = MILLION) -> list[Claim]:
    """V4-Flash against V3.2 and against a bf16 GQA-8 cache of its layers, at 1M tokens, both as served."""
    v4_config = published_config("DeepSeek-V4-Flash")
    v4 = _held(v4_config, tokens, "served")
    v32 = _held(published_config("DeepSeek-V3.2"), tokens, "served")
    gqa8 = _held(gqa8_of(v4_config), tokens, "served")
    source = "DeepSeek-V4 technical report (deepseek-ai/DeepSeek-V4-Flash model card), 1M-token context"
    return [
        Claim("v4_vs_v32", source, 7.0, 100 * v4 / v32, "percent", "served", 0.1),
        Claim("v4_vs_gqa8", source, 2.0, 100 * v4 / gqa8, "percent", "served", 0.1),
    ]


def gqa8_of(v4_config: dict[str, Any]) -> dict[str, Any]:
    """The GQA-8 model DeepSeek compares V4 with: its layers and width, 8 KV heads of V4_GQA8_HEAD_DIM, full attention."""
    heads = v4_config["num_attention_heads"]
    return {
        "model_type": "llama",
        "hidden_size": v4_config["hidden_size"],
        "num_attention_heads": heads,
        "num_key_value_heads": 8,
        "head_dim": V4_GQA8_HEAD_DIM,
        "num_hidden_layers": v4_config["num_hidden_layers"],
        "max_position_embeddings": v4_config["max_position_embeddings"],
    }


def gemma3_claim() -> Claim:
    """Gemma 3's local (sliding) layers per global one, as its 27B config lays them out."""
    kinds = describe_model(PUBLISHED["Gemma 3 27B"]).layer_kinds
    ratio = kinds.count("sliding") / kinds.count("full")
    return Claim("gemma3_local", "arXiv:2503.19786, §2.1", 5.0, ratio, "times", "reference", 0.05)


def published_claims() -> list[Claim]:
    """Every claim the page tables, measured now."""
    return [*deepseek_v2_claims(), kimi_claim(), *deepseek_v4_claims(), gemma3_claim()]
