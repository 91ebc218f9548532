"""SmolLM2 through attn_core against HF transformers' LlamaForCausalLM loaded from the same GGUF file."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from attn_core import GroupedQueryAttention, kv_cache_bytes

pytestmark = pytest.mark.slow  # `make test-fast` leaves it out (pytest.ini)

PROSE = (
    "Attention lets every token look at the tokens before it. In grouped-query attention, several query heads share "
    "one key and value head, which shrinks the cache that a model keeps while it writes. "
)
PROMPTS = {
    "english": "The capital of France is Paris. The capital of Italy is",
    "chinese": "注意力机制让每个词元都能看到它前面的词元。分组查询注意力让几个查询头共享一组键和值。",
    "code": "def softmax(x):\n    e = np.exp(x - x.max())\n    return e / e.sum()\n\nprint(softmax([1, 2, 3]))\n",
    "long": PROSE * 14,
}
LOGITS_TOLERANCE = 1e-4


@pytest.mark.parametrize("name", PROMPTS)
def test_logits_equal_hf(lm, hf_model, name):
    ids = torch.tensor([lm.encode(PROMPTS[name])])
    if name == "long":
        assert ids.shape[1] >= 500
    with torch.inference_mode():
        ours, _ = lm(ids)
        theirs = hf_model(ids).logits
    assert (ours - theirs).abs().max().item() <= LOGITS_TOLERANCE


def test_attention_maps_equal_hf(lm, hf_model):
    ids = torch.tensor([lm.encode(PROMPTS["english"])])
    with torch.inference_mode():
        _, ours = lm(ids, return_attention=True)
        theirs = hf_model(ids, output_attentions=True).attentions
    assert len(ours) == lm.config.n_layers == len(theirs)
    for layer_ours, layer_theirs in zip(ours, theirs, strict=True):
        assert layer_ours.shape == (1, lm.config.n_heads, ids.shape[1], ids.shape[1])
        assert (layer_ours - layer_theirs).abs().max().item() <= 1e-5


def test_every_attention_layer_is_an_attn_core_module(lm):
    assert all(isinstance(layer.self_attn, GroupedQueryAttention) for layer in lm.layers)
    assert lm.layers[0].self_attn.cfg.n_kv_heads == 3
    assert lm.layers[0].self_attn.cfg.n_heads == 9


def test_cached_greedy_generation_equals_hf_generate(lm, hf_model):
    ids = lm.chat_ids([{"role": "user", "content": "Name three colours."}])
    ours = lm.generate(ids, max_new_tokens=24)
    with torch.inference_mode():
        theirs = hf_model.generate(
            torch.tensor([ids]), max_new_tokens=24, do_sample=False, eos_token_id=lm.tokenizer.spec.eos_id
        )[0, len(ids) :].tolist()
    assert ours == theirs


def test_cached_generation_equals_recomputing_without_cache(lm):
    ids = lm.encode(PROMPTS["english"])
    generated = lm.generate(ids, max_new_tokens=12)
    recomputed = []
    with torch.inference_mode():
        for _ in range(len(generated)):
            logits, _ = lm(torch.tensor([ids + recomputed]))
            recomputed.append(int(logits[0, -1].argmax()))
    assert generated == recomputed


def test_cache_bytes_equal_the_formula_while_writing(lm):
    ids = lm.encode("One two three")
    cache = lm.new_cache()
    for step, _ in enumerate(lm.generate_steps(ids, max_new_tokens=5, cache=cache), start=1):
        tokens = len(ids) + step - 1  # the token just yielded is not yet in the cache
        assert cache.seq_len == tokens
        formula = lm.config.n_layers * 2 * lm.config.n_kv_heads * lm.config.head_dim * tokens * 4
        assert cache.nbytes == formula
        assert cache.nbytes == lm.config.n_layers * kv_cache_bytes(lm.attention, 1, tokens)
        assert cache.layers[0].shapes()["k"] == (1, 3, tokens, 64)


def test_seeded_sampling_repeats_and_differs_by_seed(lm):
    ids = lm.encode("Once upon a time")
    first = lm.generate(ids, 12, temperature=1.0, seed=3)
    assert first == lm.generate(ids, 12, temperature=1.0, seed=3)
    assert first != lm.generate(ids, 12, temperature=1.0, seed=4)


def test_perplexity_matches_hf_loss(lm, hf_model):
    ids = lm.encode(PROSE * 3)
    with torch.inference_mode():
        loss = hf_model(torch.tensor([ids]), labels=torch.tensor([ids])).loss.item()
    assert lm.token_nll(ids).mean().item() == pytest.approx(loss, abs=1e-4)


def test_text_past_the_context_is_refused_with_a_sentence(lm):
    with pytest.raises(ValueError, match="context"):
        lm.generate([1] * lm.config.context_length, max_new_tokens=1)


def test_the_published_preset_is_the_loaded_model(lm):
    from attn_core import PRESETS

    preset = PRESETS["SmolLM2-135M"]
    cfg = lm.config
    assert (preset.n_layers, preset.context_len) == (cfg.n_layers, cfg.context_length)
    # The preset is read from config.json, whose rms_norm_eps (1e-5) no norm of this layer uses (no q/k norm); the
    # loader leaves it at its default: every field the layer reads must agree.
    assert replace(preset.attention, norm_eps=lm.attention.norm_eps) == lm.attention
    assert preset.total_params == pytest.approx(sum(p.numel() for p in lm.parameters()), rel=1e-3)
