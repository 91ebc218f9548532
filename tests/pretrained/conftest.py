"""The trained model (ours) and HF transformers' reading of the same GGUF file (the independent reference)."""

from __future__ import annotations

import pytest
import torch

from attn_core.pretrained import gguf_path, load_pretrained


@pytest.fixture(scope="session")
def lm():
    return load_pretrained()


@pytest.fixture(scope="session")
def hf_tokenizer():
    from transformers import AutoTokenizer

    path = gguf_path()
    return AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)


@pytest.fixture(scope="session")
def hf_model():
    """LlamaForCausalLM from the same file: transformers' own dequantisation and row order, eager attention."""
    from transformers import LlamaForCausalLM

    path = gguf_path()
    model = LlamaForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, dtype=torch.float32, attn_implementation="eager"
    )
    return model.eval().requires_grad_(False)
