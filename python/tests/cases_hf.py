"""gdn.hf.use_gdn on a real transformers model: a small randomly initialised Qwen3-Next
(four layers, three of them Gated DeltaNet, no weights to download) gives the same logits
with and without gdn within a stated tolerance, for a prefill and for decode steps through
the model's cache, and a greedy generation of 32 tokens picks the same tokens wherever the
reference's choice is not a near tie. Skipped where transformers (with Qwen3-Next) is not
installed."""

import pytest
import torch

# Relative tolerance of the logits (Frobenius norm). The model's own recurrence (fla's or
# transformers' torch loop) and gdn's differ in the order of their float32 sums only.
LOGITS_RTOL = 1e-4


def _qwen3_next():
    transformers = pytest.importorskip("transformers")
    if not hasattr(transformers, "Qwen3NextConfig"):
        pytest.skip(f"transformers {transformers.__version__} has no Qwen3-Next")
    return transformers


def _model(device, seed=0):
    transformers = _qwen3_next()
    cfg = transformers.Qwen3NextConfig(
        vocab_size=256, hidden_size=128, intermediate_size=256, num_hidden_layers=4,
        num_attention_heads=2, num_key_value_heads=1, head_dim=64,
        linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=64,
        linear_value_head_dim=64, linear_conv_kernel_dim=4, num_experts=4,
        num_experts_per_tok=2, moe_intermediate_size=64, shared_expert_intermediate_size=64,
        initializer_range=0.2, max_position_embeddings=256)
    torch.manual_seed(seed)
    return transformers.Qwen3NextForCausalLM(cfg).to(device=device, dtype=torch.float32).eval()


def _rel(a, b):
    return float((a.double() - b.double()).norm() / b.double().norm())


def test_hf_qwen3_next_logits_and_generation(device):
    import gdn.hf

    model = _model(device)
    rng = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 256, (2, 40), generator=rng).to(device)
    with torch.no_grad():
        ref = model(ids, use_cache=True)
        ref_steps = [ref.logits]
        cache, nxt = ref.past_key_values, ref.logits[:, -1:].argmax(-1)
        for _ in range(4):  # decode steps through the cache
            step = model(nxt, past_key_values=cache, use_cache=True)
            ref_steps.append(step.logits)
            cache, nxt = step.past_key_values, step.logits[:, -1:].argmax(-1)
        ref_gen = model.generate(ids, max_new_tokens=32, min_new_tokens=32, do_sample=False,
                                 output_scores=True, return_dict_in_generate=True)

        assert gdn.hf.use_gdn(model) == 3  # layers 0-2 are Gated DeltaNet, layer 3 attention
        out = model(ids, use_cache=True)
        steps = [out.logits]
        cache, nxt = out.past_key_values, ref_steps[0][:, -1:].argmax(-1)
        for i in range(4):  # the reference's tokens, so both see the same inputs
            step = model(nxt, past_key_values=cache, use_cache=True)
            steps.append(step.logits)
            cache, nxt = step.past_key_values, ref_steps[i + 1][:, -1:].argmax(-1)
        gen = model.generate(ids, max_new_tokens=32, min_new_tokens=32, do_sample=False,
                             output_scores=True, return_dict_in_generate=True)

    errs = [_rel(a, b) for a, b in zip(steps, ref_steps)]
    print("[hf] logits' relative differences, prefill then steps:",
          " ".join(f"{e:.2e}" for e in errs))
    for i, e in enumerate(errs):
        assert e < LOGITS_RTOL, f"logits of {'the prefill' if i == 0 else f'step {i}'}: {e:.2e}"
    # Greedy generation of 32 tokens: the same tokens. Up to a row's first differing token
    # both runs saw the same inputs, so their scores there agree to the logits' tolerance; a
    # different token is accepted only where the measured difference of the two scores can
    # explain it (the reference's top-2 margin below the largest change of a score difference).
    n0, matched = ids.shape[1], []
    for b in range(ids.shape[0]):
        t = 0
        while t < 32 and int(gen.sequences[b, n0 + t]) == int(ref_gen.sequences[b, n0 + t]):
            assert _rel(gen.scores[t][b], ref_gen.scores[t][b]) < LOGITS_RTOL, f"row {b}, step {t}"
            t += 1
        matched.append(t)
        if t < 32:
            ref_s, s = ref_gen.scores[t][b].double(), gen.scores[t][b].double()
            assert _rel(s, ref_s) < LOGITS_RTOL, f"row {b}, first differing token {t}"
            top2 = ref_s.topk(2).values
            assert float(top2[0] - top2[1]) <= 2 * float((s - ref_s).abs().max()), \
                f"row {b}: token {t} differs without a near tie"
    print(f"[hf] greedy tokens equal per row (of 32): {matched}")
