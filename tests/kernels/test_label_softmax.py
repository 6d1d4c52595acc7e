"""The label-softmax op against a plain per-element reference, over odd shapes and every float dtype."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from ascend_eval.kernels.label_softmax import label_id_matrix, label_softmax_native  # noqa: E402

DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def reference(logits: torch.Tensor, label_ids: torch.Tensor) -> torch.Tensor:
    """Loops over rows and labels in float64: slow, obviously right."""
    b, n_labels = logits.shape[0], label_ids.shape[0]
    out = torch.empty(b, n_labels, dtype=torch.float64)
    for r in range(b):
        scores = []
        for lab in range(n_labels):
            ids = [int(i) for i in label_ids[lab] if int(i) != -1]
            scores.append(math.log(sum(math.exp(float(logits[r, i])) for i in ids)))
        top = max(scores)
        z = sum(math.exp(s - top) for s in scores)
        for lab, s in enumerate(scores):
            out[r, lab] = math.exp(s - top) / z
    return out


def make_label_ids(n_labels: int, g: int, vocab: int, gen: torch.Generator) -> torch.Tensor:
    """Token ids (distinct where the vocabulary allows), the later labels' extra slots padded with -1."""
    if n_labels * g <= vocab:
        ids = torch.randperm(vocab, generator=gen)[: n_labels * g].reshape(n_labels, g)
    else:  # a tiny vocabulary: labels share ids, which the op must handle too
        ids = torch.randint(vocab, (n_labels, g), generator=gen)
    if g > 1:
        ids[n_labels // 2 :, 1:] = -1  # half the labels have one spelling only
    return ids


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("g", [1, 2])
@pytest.mark.parametrize("n_labels", [2, 3, 5])
@pytest.mark.parametrize("vocab", [5, 50257])
@pytest.mark.parametrize("b", [1, 3, 17])
def test_matches_reference(b: int, vocab: int, n_labels: int, g: int, dtype: torch.dtype) -> None:
    gen = torch.Generator().manual_seed(b * 1000 + vocab + n_labels * 10 + g)
    logits = (torch.randn(b, vocab, generator=gen) * 4).to(dtype)
    label_ids = make_label_ids(n_labels, g, vocab, gen)

    probs = label_softmax_native(logits, label_ids)

    assert probs.shape == (b, n_labels) and probs.dtype == torch.float32
    # The op upcasts the gathered logits exactly, so only float32 rounding separates it from the float64
    # reference, whatever the input dtype.
    torch.testing.assert_close(probs.double(), reference(logits.float(), label_ids), atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(probs.sum(dim=1), torch.ones(b), atol=1e-6, rtol=0)


def test_extreme_logits_stay_finite() -> None:
    logits = torch.tensor([[1e4, -1e4, 0.0, 3e4]], dtype=torch.float32)
    probs = label_softmax_native(logits, torch.tensor([[0, 3], [1, -1], [2, -1]]))
    assert torch.isfinite(probs).all()
    torch.testing.assert_close(probs, torch.tensor([[1.0, 0.0, 0.0]]))


def test_rejects_label_without_token() -> None:
    with pytest.raises(ValueError, match="at least one token id"):
        label_softmax_native(torch.zeros(2, 5), torch.tensor([[1, -1], [-1, -1]]))


def test_rejects_out_of_range_id() -> None:
    with pytest.raises(ValueError, match=r"\[0, 5\)"):
        label_softmax_native(torch.zeros(2, 5), torch.tensor([[1], [5]]))


def test_float64_logits_stay_float64() -> None:
    """`VllmJudge` passes the label tokens' log-probabilities as float64: they are not rounded to float32."""
    gen = torch.Generator().manual_seed(5)
    logprobs = torch.log_softmax(torch.randn(3, 40, generator=gen, dtype=torch.float64), dim=-1)
    label_ids = label_id_matrix([(3, 7), (11,), (20, 21)])
    probs = label_softmax_native(logprobs, label_ids)
    assert probs.dtype == torch.float64
    torch.testing.assert_close(probs, reference(logprobs, label_ids), atol=1e-15, rtol=1e-13)
    # Log-probabilities give what logits give: the vocabulary's normaliser cancels.
    logits = logprobs + torch.randn(3, 1, generator=gen, dtype=torch.float64)
    torch.testing.assert_close(label_softmax_native(logits, label_ids), probs, atol=1e-15, rtol=1e-13)
