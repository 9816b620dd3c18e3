"""The torch custom operators (gdn.ops, torch >= 2.4): their schemas follow the functions'
arguments, and they give the functions' bits.
"""

import pytest
import torch

from cases_support import Problem, bits_equal, fold_args, sync, verify_args


HAS_CUSTOM_OPS = hasattr(torch.library, "register_fake")
needs_custom_ops = pytest.mark.skipif(not HAS_CUSTOM_OPS,
                                      reason="torch < 2.4 has no torch.library.register_fake")


def test_ops_module_on_an_old_torch_is_an_import_error():
    if HAS_CUSTOM_OPS:
        pytest.skip("this torch has custom operators")
    with pytest.raises(ImportError, match=r"torch >= 2\.4") as e:
        import gdn.ops  # noqa: F401
    assert torch.__version__ in str(e.value)


@needs_custom_ops
def test_operators_take_the_functions_arguments():
    """Every operator's schema lists its function's arguments in order (head for cfg, no
    stream), and marks as written at least the tensors the call's documentation says it
    writes."""
    import inspect

    import gdn.ops
    writes = {"state", "out", "ring", "history", "ledger", "conv_state", "conv_ring",
              "conv_history", "workspace"}
    for name in gdn.ops.OPERATORS:
        schema = getattr(torch.ops.gdn, name).default._schema
        names = ["cfg" if a.name == "head" else a.name for a in schema.arguments]
        params = [n for n in inspect.signature(getattr(gdn, name)).parameters if n != "stream"]
        assert names == params, name
        written = {a.name for a in schema.arguments
                   if a.alias_info is not None and a.alias_info.is_write}
        # The inputs that a call only reads: the ring of a fold, the history and ledger of
        # the conv's lazy verify, the history of accept, drop and flush.
        read_only = {"state_fold": {"ring", "conv_ring"},
                     "conv1d_verify_lazy": {"history", "ledger"}, "lazy_accept": {"history"},
                     "lazy_drop": {"history"},
                     "state_flush": {"history", "conv_history"}}.get(name, set())
        assert written == (writes & set(params)) - read_only, name
    p = Problem("cpu", lengths=(1,))
    with pytest.raises(ValueError, match="'head'"):
        torch.ops.gdn.recurrence_fwd([2, 4, 64], *p.inputs(), p.state(), p.out())


@needs_custom_ops
def test_operators_give_the_functions_bits(device):
    """verify, fold and a lazy step through torch.ops.gdn equal the gdn functions bit for
    bit; torch.library.opcheck finds the schemas (the tensors written) and the fake
    implementations right."""
    import gdn.ops
    p = Problem(device, lengths=(3, 0, 5, 1))
    head = gdn.ops.head_of(p.cfg)
    a, b = verify_args(p), verify_args(p)
    gdn.recurrence_verify_ring(**a)
    del b["cfg"]
    torch.ops.gdn.recurrence_verify_ring(head, **b)
    sync(device)
    for name in ("out", "ring", "state"):
        assert bits_equal(a[name], b[name]), name
    f, h = fold_args(p), fold_args(p)
    f["ring"], h["ring"] = a["ring"].clone(), a["ring"].clone()
    # Each row's recorded window accepted whole; empty rows and the committed row (5 > 4) fold none.
    f["num_accepted"] = h["num_accepted"] = p.idx([n if n <= 4 else 0 for n in p.lengths])
    gdn.state_fold(**f)
    del h["cfg"]
    torch.ops.gdn.state_fold(head, **h)
    sync(device)
    assert bits_equal(f["state"], h["state"])
    # A lazy step: verify into a history, accept, flush.
    cfg = p.cfg
    rec = gdn.ring_record_elements(cfg.key_head_dim, cfg.value_head_dim, cfg.group_size)
    states = []
    for ops in (False, True):
        c = verify_args(p)
        history = torch.zeros(5, cfg.num_key_heads, 8, rec, device=device)
        ledger = torch.zeros(5, gdn.lazy_ledger_words(8), dtype=torch.int32, device=device)
        rows, rrows = p.idx([p.slots]), c["ring_slots"].view(1, -1)
        acc = p.idx([2, 0, 3, 1])
        lazy = (c["qkv"], c["decay"], c["beta"], c["row_offsets"], c["state_slots"], c["state"],
                c["out"], c["ring_slots"], history, ledger)
        if ops:
            torch.ops.gdn.recurrence_verify_lazy(head, *lazy)
            torch.ops.gdn.lazy_accept(rrows, history, ledger, acc)
            torch.ops.gdn.state_flush(head, rows, c["state"], rrows, history, ledger)
        else:
            gdn.recurrence_verify_lazy(cfg, *lazy)
            gdn.lazy_accept(rrows, history, ledger, acc)
            gdn.state_flush(cfg, rows, c["state"], rrows, history, ledger)
        sync(device)
        states.append((c["out"], c["state"]))
    assert bits_equal(states[0][0], states[1][0]) and bits_equal(states[0][1], states[1][1])
    v = verify_args(p)
    del v["cfg"]
    for op, args in ((torch.ops.gdn.recurrence_verify_ring.default, (head, *v.values())),
                     (torch.ops.gdn.state_fold.default, (head, *h.values()))):
        torch.library.opcheck(op, args, test_utils=("test_schema", "test_faketensor"))
