"""Published models' config.json, the fields attention and its cache read, copied as published (key names and
old/new formats as the files have them). Each dict names its source; fields a file leaves out default as
transformers' config class says (noted where it matters)."""

from __future__ import annotations

# openai/gpt-oss-120b config.json (Hugging Face Hub): 36 layers alternating sliding (window 128) and full attention,
# 64 query heads and 8 KV heads of 64, attention biases, learned sinks, YaRN factor 32 over 4096 positions.
GPT_OSS_120B = {
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
GEMMA3_27B = {
    "model_type": "gemma3",
    "text_config": {
        "head_dim": 128,
        "hidden_size": 5376,
        "intermediate_size": 21504,
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
LLAMA3_8B = {
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
MISTRAL_7B = {
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
QWEN3_8B = {
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

# deepseek-ai/DeepSeek-V3 config.json (Hugging Face Hub); DeepSeek-V3 report (arXiv:2412.19437): 61 layers of MLA,
# 128 heads, d_c (kv_lora_rank) 512, d_h^R (qk_rope_head_dim) 64, YaRN factor 40 over 4096 positions.
DEEPSEEK_V3 = {
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

PUBLISHED = {
    "gpt-oss-120b": GPT_OSS_120B,
    "gemma-3-27b": GEMMA3_27B,
    "llama-3-8b": LLAMA3_8B,
    "mistral-7b": MISTRAL_7B,
    "qwen3-8b": QWEN3_8B,
    "deepseek-v3": DEEPSEEK_V3,
}
