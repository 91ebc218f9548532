"""Published models' config.json, as runtime data: the fields attention and its cache read, copied as published (key
names and old/new formats as the files have them), each with its source. Fields a file leaves out default as
transformers' config class says (noted where it matters). attn_core.hf reads them as it reads any config.json:

    describe_model(published_config("gpt-oss-120b")).cache_bytes(tokens=131072)

PUBLISHED maps a model's name to its config (read it, do not change it: published_config() gives a copy to change);
SOURCES names where each one's numbers come from.
"""

from __future__ import annotations

import copy
from typing import Any

# openai/gpt-oss-120b config.json (Hugging Face Hub): 36 layers alternating sliding (window 128) and full attention,
# 64 query heads and 8 KV heads of 64, attention biases, learned sinks, YaRN factor 32 over 4096 positions.
GPT_OSS_120B: dict[str, Any] = {
    "model_type": "gpt_oss",
    "hidden_size": 2880,
    "head_dim": 64,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "num_hidden_layers": 36,
    "sliding_window": 128,
    "layer_types": ["sliding_attention", "full_attention"] * 18,
    "max_position_embeddings": 131072,
    "attention_bias": True,
    "rope_theta": 150000,
    "rope_scaling": {
        "beta_fast": 32.0,
        "beta_slow": 1.0,
        "factor": 32.0,
        "original_max_position_embeddings": 4096,
        "rope_type": "yarn",
        "truncate": False,
    },
}

# google/gemma-3-27b-it config.json (Hugging Face Hub): a multimodal wrapper whose text_config gives 62 layers of
# 32 query heads and 16 KV heads of 128, query_pre_attn_scalar 168, window 1024, linear RoPE scaling 8 on the global
# layers. Left to Gemma3TextConfig's defaults: sliding_window_pattern 6 (one global layer in six), rope_theta
# 1,000,000, rope_local_base_freq 10,000, max_position_embeddings 131072.
GEMMA3_27B: dict[str, Any] = {
    "model_type": "gemma3",
    "text_config": {
        "head_dim": 128,
        "hidden_size": 5376,
        "model_type": "gemma3_text",
        "num_attention_heads": 32,
        "num_hidden_layers": 62,
        "num_key_value_heads": 16,
        "query_pre_attn_scalar": 168,
        "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
        "sliding_window": 1024,
    },
}

# meta-llama/Meta-Llama-3-8B config.json (Hugging Face Hub): 32 layers, 32 query heads, 8 KV heads, hidden 4096
# (head_dim 128), rope_theta 500000, 8192 positions, no RoPE scaling.
LLAMA3_8B: dict[str, Any] = {
    "model_type": "llama",
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_hidden_layers": 32,
    "max_position_embeddings": 8192,
    "rope_theta": 500000.0,
    "rope_scaling": None,
    "attention_bias": False,
    "rms_norm_eps": 1e-05,
}

# mistralai/Mistral-7B-v0.1 config.json (Hugging Face Hub); Jiang et al. 2023 (arXiv:2310.06825) table 1: 32 layers,
# 32 heads, 8 KV heads, hidden 4096, sliding_window 4096 on every layer, 32768 positions.
MISTRAL_7B: dict[str, Any] = {
    "model_type": "mistral",
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_hidden_layers": 32,
    "max_position_embeddings": 32768,
    "sliding_window": 4096,
    "rope_theta": 10000.0,
    "rms_norm_eps": 1e-05,
}

# Qwen/Qwen3-8B config.json (Hugging Face Hub): 36 layers, 32 query heads, 8 KV heads of 128, 40960 positions,
# rope_theta 1,000,000, no window in use (use_sliding_window false).
QWEN3_8B: dict[str, Any] = {
    "model_type": "qwen3",
    "hidden_size": 4096,
    "head_dim": 128,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_hidden_layers": 36,
    "max_position_embeddings": 40960,
    "max_window_layers": 36,
    "rope_scaling": None,
    "rope_theta": 1000000,
    "sliding_window": None,
    "use_sliding_window": False,
    "attention_bias": False,
    "rms_norm_eps": 1e-06,
}

# HuggingFaceTB/SmolLM2-135M config.json (Hugging Face Hub), as attn_core.presets and attn_core.pretrained read it:
# hidden 576, 9 heads, 3 KV heads (head_dim 64), 30 layers, rope_theta 100000, 8192 positions.
SMOLLM2_135M: dict[str, Any] = {
    "model_type": "llama",
    "hidden_size": 576,
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
    "num_hidden_layers": 30,
    "max_position_embeddings": 8192,
    "rope_theta": 100000,
    "rope_scaling": None,
    "attention_bias": False,
    "rms_norm_eps": 1e-05,
}

# deepseek-ai/DeepSeek-V3 config.json (Hugging Face Hub); DeepSeek-V3 report (arXiv:2412.19437): 61 layers of MLA,
# 128 heads, d_c (kv_lora_rank) 512, d_h^R (qk_rope_head_dim) 64, YaRN factor 40 over 4096 positions.
DEEPSEEK_V3: dict[str, Any] = {
    "model_type": "deepseek_v3",
    "hidden_size": 7168,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "num_hidden_layers": 61,
    "kv_lora_rank": 512,
    "q_lora_rank": 1536,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "max_position_embeddings": 163840,
    "rope_theta": 10000,
    "rope_scaling": {
        "beta_fast": 32,
        "beta_slow": 1,
        "factor": 40,
        "mscale": 1.0,
        "mscale_all_dim": 1.0,
        "original_max_position_embeddings": 4096,
        "type": "yarn",
    },
    "attention_bias": False,
}

# deepseek-ai/DeepSeek-V3.2-Exp config.json (Hugging Face Hub); DeepSeek-V3.2 report: DeepSeek-V3's MLA on all 61
# layers plus the lightning indexer (DSA): 64 indexer heads of 128, each query reads the top 2048 cached tokens.
DEEPSEEK_V32: dict[str, Any] = {
    **{key: value for key, value in DEEPSEEK_V3.items() if key != "rope_scaling"},
    "model_type": "deepseek_v32",
    "rope_scaling": dict(DEEPSEEK_V3["rope_scaling"]),
    "index_n_heads": 64,
    "index_head_dim": 128,
    "index_topk": 2048,
}

# deepseek-ai/DeepSeek-V4-Flash-Base config.json (Hugging Face Hub; quoted whole in alibaba/rtp-llm's V4 tests):
# 43 layers, 64 query heads sharing one K=V head of 512 (64 rotary), a 128-token window on every layer, and per
# layer compress_ratios: 0 (window only) on layers 0-1, then 4 (CSA: one entry per 4 tokens, top-512 picked by a
# 64-head indexer of 128) and 128 (HCA: one entry per 128 tokens, read whole) in turn; the list's 44th entry is the
# multi-token-prediction layer's, which is not one of the 43.
DEEPSEEK_V4_FLASH: dict[str, Any] = {
    "model_type": "deepseek_v4",
    "hidden_size": 4096,
    "num_attention_heads": 64,
    "num_key_value_heads": 1,
    "num_hidden_layers": 43,
    "head_dim": 512,
    "q_lora_rank": 1024,
    "qk_rope_head_dim": 64,
    "o_groups": 8,
    "o_lora_rank": 1024,
    "sliding_window": 128,
    "index_n_heads": 64,
    "index_head_dim": 128,
    "index_topk": 512,
    "compress_ratios": [0, 0, *[4, 128] * 20, 4, 0],
    "compress_rope_theta": 160000,
    "rope_theta": 10000,
    "rope_scaling": {
        "beta_fast": 32,
        "beta_slow": 1,
        "factor": 16,
        "original_max_position_embeddings": 65536,
        "type": "yarn",
    },
    "max_position_embeddings": 1048576,
    "rms_norm_eps": 1e-06,
    "attention_bias": False,
}

# Qwen/Qwen3-Next-80B-A3B-Instruct config.json (Hugging Face Hub; transformers' Qwen3NextConfig defaults are this
# checkpoint's): 48 layers, every 4th full attention (16 query heads, 2 KV heads of 256, a quarter of each head
# rotated), the others Gated DeltaNet (16 key heads and 32 value heads of 128, a 4-tap convolution).
QWEN3_NEXT_80B: dict[str, Any] = {
    "model_type": "qwen3_next",
    "hidden_size": 2048,
    "num_attention_heads": 16,
    "num_key_value_heads": 2,
    "head_dim": 256,
    "num_hidden_layers": 48,
    "full_attention_interval": 4,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 32,
    "linear_key_head_dim": 128,
    "linear_value_head_dim": 128,
    "linear_conv_kernel_dim": 4,
    "partial_rotary_factor": 0.25,
    "rope_theta": 10000000,
    "max_position_embeddings": 262144,
    "rms_norm_eps": 1e-06,
    "attention_bias": False,
    "hidden_act": "silu",
}

# moonshotai/Kimi-Linear-48B-A3B-Instruct config.json (Hugging Face Hub; transformers' KimiLinearConfig defaults are
# this checkpoint's): 27 layers, MLA without RoPE (32 heads, d_c 512) on the 7 layers linear_attn_config names
# full_attn_layers (1-indexed), Kimi Delta Attention (32 heads of 128, a 4-tap convolution) on the other 20;
# model_max_length 1048576.
KIMI_LINEAR_48B: dict[str, Any] = {
    "model_type": "kimi_linear",
    "hidden_size": 2304,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "num_hidden_layers": 27,
    "kv_lora_rank": 512,
    "q_lora_rank": None,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "mla_use_nope": True,
    "linear_attn_config": {
        "full_attn_layers": [4, 8, 12, 16, 20, 24, 27],
        "kda_layers": [n for n in range(1, 27) if n % 4],
        "num_heads": 32,
        "head_dim": 128,
        "short_conv_kernel_size": 4,
    },
    "model_max_length": 1048576,
    "rms_norm_eps": 1e-05,
    "hidden_act": "silu",
}

# zai-org/GLM-5: the attention fields as transformers' GlmMoeDsaConfig defaults them (its documented checkpoint):
# 78 layers of DeepSeek-V3.2's DSA (MLA with d_c 512, d_h^R 64, 64 heads; a 32-head indexer of 128 picking the top
# 2048), 202,752 positions. Not confirmed from the checkpoint's own config.json: rope_theta (RoPE does not change the
# cache) and whether it sets indexer_types; left out, transformers' schedule makes every layer "full" (no shared
# top-k layers).
GLM_5: dict[str, Any] = {
    "model_type": "glm_moe_dsa",
    "hidden_size": 6144,
    "num_attention_heads": 64,
    "num_key_value_heads": 64,
    "num_hidden_layers": 78,
    "q_lora_rank": 2048,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 192,
    "qk_rope_head_dim": 64,
    "v_head_dim": 256,
    "index_n_heads": 32,
    "index_head_dim": 128,
    "index_topk": 2048,
    "max_position_embeddings": 202752,
    "rms_norm_eps": 1e-05,
    "attention_bias": False,
}

# MiniMaxAI/MiniMax-M1-80k config.json (MiniMax's own format, model_type minimax_m1, as quoted whole in a copy of
# the MiniMax-M1 repository): 80 layers, attn_type_list 0 (lightning attention) on seven of every eight and 1
# (softmax GQA: 64 query heads, 8 KV heads of 128) on every eighth, RoPE on rotary_dim 64 of each head's 128 dims,
# 10,240,000 positions. block_size is not in the file: transformers' default (256) is the one HF's module uses.
MINIMAX_M1: dict[str, Any] = {
    "model_type": "minimax_m1",
    "hidden_size": 6144,
    "head_dim": 128,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "num_hidden_layers": 80,
    "attn_type_list": [0, 0, 0, 0, 0, 0, 0, 1] * 10,
    "hidden_act": "silu",
    "max_position_embeddings": 10240000,
    "rope_theta": 10000000,
    "rotary_dim": 64,
    "sliding_window": None,
    "rms_norm_eps": 1e-05,
}

# MiniMaxAI/MiniMax-M2 config.json (model_type minimax_m2): 62 layers of full softmax attention (attn_type_list all
# 1), 48 query heads and 8 KV heads of 128, q/k RMSNorm over each layer's heads (qk_norm_type per_layer), RoPE on
# rotary_dim 64 of 128 (theta 5,000,000), 196,608 positions. Confirmed against transformers' MiniMaxM2Config
# defaults and the M2.5 release's config.json as quoted by others (same attention fields), not from the M2 file itself.
# Why its authors went back to full attention: attn_core.presets.STATED_REASONS.
MINIMAX_M2: dict[str, Any] = {
    "model_type": "minimax_m2",
    "hidden_size": 3072,
    "head_dim": 128,
    "num_attention_heads": 48,
    "num_key_value_heads": 8,
    "num_hidden_layers": 62,
    "attn_type_list": [1] * 62,
    "max_position_embeddings": 196608,
    "rope_theta": 5000000,
    "rotary_dim": 64,
    "use_qk_norm": True,
    "qk_norm_type": "per_layer",
    "sliding_window": None,
    "rms_norm_eps": 1e-06,
}

# google/gemma-3n-E4B-it config.json (Hugging Face Hub; transformers' Gemma3nTextConfig defaults are this checkpoint's):
# a multimodal wrapper whose text_config gives 35 layers, four sliding (window 512) to one full, 8 query heads and 2
# KV heads of 256; the last 15 layers (num_kv_shared_layers) compute no keys or values and read those of layer 18
# (sliding) or 19 (full). query_pre_attn_scalar is in the file but HF's Gemma3nTextAttention scales scores by 1.
GEMMA3N_E4B: dict[str, Any] = {
    "model_type": "gemma3n",
    "text_config": {
        "model_type": "gemma3n_text",
        "hidden_size": 2048,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 256,
        "num_hidden_layers": 35,
        "num_kv_shared_layers": 15,
        "layer_types": (["sliding_attention"] * 4 + ["full_attention"]) * 7,
        "sliding_window": 512,
        "max_position_embeddings": 32768,
        "query_pre_attn_scalar": 256,
        "rope_theta": 1000000.0,
        "rope_local_base_freq": 10000.0,
        "rope_scaling": None,
        "attention_bias": False,
        "rms_norm_eps": 1e-06,
    },
}

# google/gemma-4-31B-it config.json (Hugging Face Hub): a multimodal wrapper whose text_config gives 60 layers, five
# sliding (window 1024; 16 KV heads of 256) to one global (4 KV heads of 512, attention_k_eq_v: the value is the key,
# one tensor cached), 32 query heads; proportional RoPE on a quarter of each global head (theta 1,000,000), plain RoPE
# (theta 10,000) on the sliding layers; no KV sharing. Not confirmed from the file itself (quoted from third-party
# copies of it): max_position_embeddings (262144; some copies say 131072, Gemma4TextConfig's default).
GEMMA4_31B: dict[str, Any] = {
    "model_type": "gemma4",
    "text_config": {
        "model_type": "gemma4_text",
        "hidden_size": 5376,
        "num_attention_heads": 32,
        "num_key_value_heads": 16,
        "num_global_key_value_heads": 4,
        "head_dim": 256,
        "global_head_dim": 512,
        "attention_k_eq_v": True,
        "num_hidden_layers": 60,
        "num_kv_shared_layers": 0,
        "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 10,
        "sliding_window": 1024,
        "max_position_embeddings": 262144,
        "rope_parameters": {
            "full_attention": {"partial_rotary_factor": 0.25, "rope_theta": 1000000.0, "rope_type": "proportional"},
            "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"},
        },
        "attention_bias": False,
        "rms_norm_eps": 1e-06,
    },
}

# meta-llama/Llama-4-Scout-17B-16E config.json (Hugging Face Hub; https://huggingface.co/meta-llama/Llama-4-Scout-17B-16E,
# read here from copies quoted in public repositories): a multimodal wrapper whose text_config gives 48 layers of 40
# query heads and 8 KV heads of 128; every 4th layer NoPE and global (no_rope_layers), the others RoPE and chunked
# (attention_chunk_size 8192); llama3 RoPE scaling (factor 8 over 8192 positions); the q/k L2 norm on RoPE layers;
# the NoPE layers' query temperature (floor_scale 8192, attn_scale 0.1). attn_temperature_tuning is 4 in the file,
# which transformers 4 read by truth and transformers 5's strict Llama4TextConfig refuses (it wants true/false).
# Not confirmed: max_position_embeddings 262144 (both copies say so; the model card speaks of a 10M context).
LLAMA4_SCOUT: dict[str, Any] = {
    "model_type": "llama4",
    "text_config": {
        "model_type": "llama4_text",
        "hidden_size": 5120,
        "head_dim": 128,
        "num_attention_heads": 40,
        "num_key_value_heads": 8,
        "num_hidden_layers": 48,
        "attention_chunk_size": 8192,
        "no_rope_layers": [1, 1, 1, 0] * 12,
        "use_qk_norm": True,
        "attn_temperature_tuning": 4,
        "floor_scale": 8192,
        "attn_scale": 0.1,
        "attention_bias": False,
        "max_position_embeddings": 262144,
        "rope_theta": 500000.0,
        "rope_scaling": {
            "factor": 8.0,
            "high_freq_factor": 4.0,
            "low_freq_factor": 1.0,
            "original_max_position_embeddings": 8192,
            "rope_type": "llama3",
        },
        "rms_norm_eps": 1e-05,
    },
}

# HuggingFaceTB/SmolLM3-3B config.json (Hugging Face Hub; https://huggingface.co/HuggingFaceTB/SmolLM3-3B): 36 layers,
# 16 query heads and 4 KV heads (head_dim 2048 / 16 = 128, no head_dim field), every 4th layer NoPE
# (no_rope_layers, no_rope_layer_interval 4), rope_theta 5,000,000, 65536 positions, no window in use. Not confirmed:
# that the file lists no_rope_layers (some copies leave it to no_rope_layer_interval, which gives the same layers).
SMOLLM3_3B: dict[str, Any] = {
    "model_type": "smollm3",
    "hidden_size": 2048,
    "num_attention_heads": 16,
    "num_key_value_heads": 4,
    "num_hidden_layers": 36,
    "no_rope_layer_interval": 4,
    "no_rope_layers": [1, 1, 1, 0] * 9,
    "max_position_embeddings": 65536,
    "rope_theta": 5000000.0,
    "rope_scaling": None,
    "sliding_window": None,
    "use_sliding_window": False,
    "attention_bias": False,
    "rms_norm_eps": 1e-06,
}

# nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 config.json (Hugging Face Hub; transformers' NemotronHConfig names it as
# its checkpoint; the same file is quoted whole in public bring-up notes and test fixtures, which agree on every field
# below): 52 layers by hybrid_override_pattern, 23 Mamba-2 (M: 64 heads of 64, state 128, 8 groups, a 4-tap
# convolution), 6 attention (*: 32 query heads, 2 KV heads of 128, no RoPE) and 23 mixture-of-experts layers (E: no
# cache); 262144 positions. model_max_length is not given here: the model card's 1M-token context is not a config field.
NEMOTRON_3_NANO: dict[str, Any] = {
    "model_type": "nemotron_h",
    "hidden_size": 2688,
    "num_hidden_layers": 52,
    "hybrid_override_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
    "num_attention_heads": 32,
    "num_key_value_heads": 2,
    "head_dim": 128,
    "attention_bias": False,
    "mamba_num_heads": 64,
    "mamba_head_dim": 64,
    "ssm_state_size": 128,
    "n_groups": 8,
    "conv_kernel": 4,
    "chunk_size": 128,
    "expand": 2,
    "use_conv_bias": True,
    "use_bias": False,
    "mamba_hidden_act": "silu",
    "mamba_ssm_cache_dtype": "float32",
    "time_step_min": 0.001,
    "layer_norm_epsilon": 1e-05,
    "max_position_embeddings": 262144,
    "sliding_window": None,
}

PUBLISHED: dict[str, dict[str, Any]] = {
    "Llama 3 8B": LLAMA3_8B,
    "Mistral 7B": MISTRAL_7B,
    "Qwen3-8B": QWEN3_8B,
    "Gemma 3 27B": GEMMA3_27B,
    "gpt-oss-120b": GPT_OSS_120B,
    "Qwen3-Next-80B-A3B": QWEN3_NEXT_80B,
    "DeepSeek-V3": DEEPSEEK_V3,
    "DeepSeek-V3.2": DEEPSEEK_V32,
    "DeepSeek-V4-Flash": DEEPSEEK_V4_FLASH,
    "Kimi Linear 48B-A3B": KIMI_LINEAR_48B,
    "SmolLM2-135M": SMOLLM2_135M,
    "GLM-5": GLM_5,
    "MiniMax-M1": MINIMAX_M1,
    "MiniMax-M2": MINIMAX_M2,
    "Gemma 3n E4B": GEMMA3N_E4B,
    "Gemma 4 31B": GEMMA4_31B,
    "Llama 4 Scout": LLAMA4_SCOUT,
    "SmolLM3-3B": SMOLLM3_3B,
    "Nemotron 3 Nano 30B-A3B": NEMOTRON_3_NANO,
}

SOURCES: dict[str, str] = {
    "Llama 3 8B": "meta-llama/Meta-Llama-3-8B config.json",
    "Mistral 7B": "mistralai/Mistral-7B-v0.1 config.json; arXiv:2310.06825",
    "Qwen3-8B": "Qwen/Qwen3-8B config.json",
    "Gemma 3 27B": "google/gemma-3-27b-it config.json (text_config)",
    "gpt-oss-120b": "openai/gpt-oss-120b config.json",
    "Qwen3-Next-80B-A3B": "Qwen/Qwen3-Next-80B-A3B-Instruct config.json",
    "DeepSeek-V3": "deepseek-ai/DeepSeek-V3 config.json; arXiv:2412.19437",
    "DeepSeek-V3.2": "deepseek-ai/DeepSeek-V3.2-Exp config.json",
    "DeepSeek-V4-Flash": "deepseek-ai/DeepSeek-V4-Flash-Base config.json",
    "Kimi Linear 48B-A3B": "moonshotai/Kimi-Linear-48B-A3B-Instruct config.json",
    "SmolLM2-135M": "HuggingFaceTB/SmolLM2-135M config.json",
    "GLM-5": "transformers GlmMoeDsaConfig defaults (zai-org/GLM-5); rope_theta and indexer_types unconfirmed",
    "MiniMax-M1": "MiniMaxAI/MiniMax-M1-80k config.json",
    "MiniMax-M2": "MiniMaxAI/MiniMax-M2 config.json (attention fields as transformers' MiniMaxM2Config)",
    "Gemma 3n E4B": "google/gemma-3n-E4B-it config.json (text_config)",
    "Gemma 4 31B": "google/gemma-4-31B-it config.json (text_config)",
    "Llama 4 Scout": "meta-llama/Llama-4-Scout-17B-16E config.json (text_config)",
    "SmolLM3-3B": "HuggingFaceTB/SmolLM3-3B config.json",
    "Nemotron 3 Nano 30B-A3B": "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 config.json",
}


def published_config(name: str) -> dict[str, Any]:
    """A copy of the published config called `name` (a key of PUBLISHED), to read or change freely."""
    if name not in PUBLISHED:
        raise ValueError(f"no published config called {name!r}: choose one of {', '.join(PUBLISHED)}.")
    return copy.deepcopy(PUBLISHED[name])


def context_length(hf: dict[str, Any]) -> int | None:
    """The context a config was published for: max_position_embeddings (of text_config for a wrapper), else
    model_max_length (Kimi Linear's); None when it gives neither as a whole number."""
    wrapped = hf.get("text_config")
    text: dict[str, Any] = wrapped if isinstance(wrapped, dict) else hf
    for source in (text, hf):
        for field in ("max_position_embeddings", "model_max_length"):
            value = source.get(field)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return DEFAULT_CONTEXT.get(str(text.get("model_type")))


# The context of a config that leaves it to its config class (gemma-3-27b-it does): that class's default.
DEFAULT_CONTEXT = {"gemma3_text": 131072}
