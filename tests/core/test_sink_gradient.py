"""Learned sink logits can be trained: attend's softmax with sinks gives the gradients of an explicit sink column."""

from __future__ import annotations

import torch

from attn_core.attend import KeyMask, attend


def test_sink_logits_and_queries_get_the_gradients_of_a_softmax_with_a_sink_column():
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(1, 4, 5, 8, generator=generator, requires_grad=True)
    k, v = torch.randn(1, 2, 5, 8, generator=generator), torch.randn(1, 2, 5, 8, generator=generator)
    sinks = torch.randn(4, generator=generator, requires_grad=True)
    out, _ = attend(q, k, v, scale=0.3, mask=KeyMask(None, plain_causal=True), return_weights=False, sinks=sinks)
    upstream = torch.randn(out.shape, generator=generator)
    grads = torch.autograd.grad((out * upstream).sum(), (q, sinks))

    # the reference: every query head's keys written out, the sink as one more score column whose weight is dropped
    scores = q @ k.repeat_interleave(2, dim=1).transpose(-1, -2) * 0.3
    scores = scores.masked_fill(torch.ones(5, 5, dtype=torch.bool).triu(1), float("-inf"))
    column = sinks.view(1, 4, 1, 1).expand(1, 4, 5, 1)
    weights = torch.cat((scores, column), dim=-1).softmax(dim=-1)[..., :-1]
    reference = weights @ v.repeat_interleave(2, dim=1)
    expected = torch.autograd.grad((reference * upstream).sum(), (q, sinks))

    assert (out - reference).abs().max().item() <= 1e-6
    for got, want in zip(grads, expected, strict=True):
        assert (got - want).abs().max().item() <= 1e-6
