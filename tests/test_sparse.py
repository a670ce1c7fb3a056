"""Sparse COO and CSR tensors on foo: created, converted, computed with and
trained with as on CPU, their values on the device (tests/test_opinfo.py
sweeps the sparse OpInfo entries too)."""

import pytest
import torch
import torch.nn as nn

from conftest import held_stream, run_python_json

BUSY_MS = 150


def _coo():
    indices = torch.tensor([[0, 1, 1, 0], [2, 0, 2, 2]])
    values = torch.tensor([3.0, 4.0, 5.0, 1.0])  # (0, 2) twice: uncoalesced
    return torch.sparse_coo_tensor(indices, values, (2, 3))


def test_coo_tensor_lives_on_foo_with_its_indices_and_values():
    cpu = _coo()
    s = torch.sparse_coo_tensor(cpu._indices().to("foo"), cpu._values().to("foo"), (2, 3))
    assert s.device.type == "foo" and s.layout == torch.sparse_coo
    assert s._indices().device.type == "foo" and s._values().device.type == "foo"
    assert s._nnz() == 4 and not s.is_coalesced()
    assert torch.equal(s.to_dense().cpu(), cpu.to_dense())
    c = s.coalesce()
    assert c.is_coalesced() and c._nnz() == 3
    assert torch.equal(c.indices().cpu(), cpu.coalesce().indices())
    assert torch.equal(c.values().cpu(), cpu.coalesce().values())
    made_on_foo = torch.sparse_coo_tensor(cpu._indices(), cpu._values(), (2, 3), device="foo")
    assert made_on_foo.device.type == "foo" and torch.equal(made_on_foo.to_dense().cpu(), cpu.to_dense())


def test_moving_sparse_tensors_between_cpu_and_foo():
    cpu = _coo().coalesce()
    there = cpu.to("foo")
    assert there.layout == torch.sparse_coo and there.is_coalesced()
    back = there.cpu()
    assert torch.equal(back.indices(), cpu.indices()) and torch.equal(back.values(), cpu.values())


@pytest.mark.parametrize("layout", ["coo", "csr", "csc"])
def test_dense_to_sparse_and_back(layout):
    torch.manual_seed(0)
    d = torch.randn(4, 5) * (torch.rand(4, 5) > 0.5)
    convert = {"coo": lambda t: t.to_sparse(), "csr": lambda t: t.to_sparse_csr(),
               "csc": lambda t: t.to_sparse_csc()}[layout]
    s = convert(d.to("foo"))
    want = convert(d)
    assert s.device.type == "foo" and s.layout == want.layout
    assert torch.equal(s.to_dense().cpu(), d)
    if layout == "csr":
        assert torch.equal(s.crow_indices().cpu(), want.crow_indices())
        assert torch.equal(s.col_indices().cpu(), want.col_indices())
        assert torch.equal(s.values().cpu(), want.values())


def test_csr_tensor_made_on_foo():
    crow, col, val = torch.tensor([0, 2, 3]), torch.tensor([0, 2, 1]), torch.tensor([1.0, 2.0, 3.0])
    s = torch.sparse_csr_tensor(crow, col, val, (2, 3), device="foo")
    assert s.device.type == "foo" and s.layout == torch.sparse_csr
    assert torch.equal(s.to_dense().cpu(), torch.sparse_csr_tensor(crow, col, val, (2, 3)).to_dense())


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_sparse_dense_matmul_equals_cpu(layout):
    torch.manual_seed(0)
    d = torch.randn(5, 4) * (torch.rand(5, 4) > 0.6)
    m = torch.randn(4, 3)
    s = d.to_sparse() if layout == "coo" else d.to_sparse_csr()
    fs = s.to("foo")
    for fn in (torch.mm, torch.sparse.mm, lambda a, b: a @ b):
        got = fn(fs, m.to("foo"))
        assert got.device.type == "foo" and got.layout == torch.strided
        torch.testing.assert_close(got.cpu(), fn(s, m))
    bias = torch.randn(5, 3)
    torch.testing.assert_close(torch.addmm(bias.to("foo"), fs, m.to("foo"), beta=0.5, alpha=2).cpu(),
                               torch.addmm(bias, s, m, beta=0.5, alpha=2))


def test_elementwise_ops_and_sums_with_a_dense_operand():
    s, d = _coo(), torch.randn(2, 3)
    fs, fd = s.to("foo"), d.to("foo")
    torch.testing.assert_close((fd + fs).cpu(), d + s)
    torch.testing.assert_close((fs * fd).to_dense().cpu(), (s * d).to_dense())
    torch.testing.assert_close((fs * 2.5).to_dense().cpu(), (s * 2.5).to_dense())
    torch.testing.assert_close(torch.sparse.sum(fs).cpu(), torch.sparse.sum(s))
    torch.testing.assert_close(torch.sparse.sum(fs, dim=1).to_dense().cpu(), torch.sparse.sum(s, dim=1).to_dense())
    torch.testing.assert_close(fs.abs().neg().to_dense().cpu(), s.abs().neg().to_dense())


def test_sampled_addmm_equals_cpu():
    torch.manual_seed(0)
    mask = (torch.rand(4, 6) > 0.5).float().to_sparse_csr()
    a, b = torch.randn(4, 5), torch.randn(5, 6)
    got = torch.sparse.sampled_addmm(mask.to("foo"), a.to("foo"), b.to("foo"), beta=0.5)
    want = torch.sparse.sampled_addmm(mask, a, b, beta=0.5)
    assert got.layout == torch.sparse_csr and got.device.type == "foo"
    torch.testing.assert_close(got.to_dense().cpu(), want.to_dense())


def test_sparse_results_wait_for_queued_work(foo):
    d = torch.zeros(3, 3, device="foo")
    foo._sleep(BUSY_MS)
    d[1, 2] = 7.0  # queued behind the sleep
    s = d.to_sparse()
    assert s._nnz() == 1
    assert s.indices().cpu().tolist() == [[1], [2]] and s.values().cpu().tolist() == [7.0]


def test_embedding_with_sparse_gradients_trains_with_sparse_adam_as_on_cpu():
    torch.manual_seed(0)
    cpu_emb = nn.Embedding(10, 4, sparse=True)
    foo_emb = nn.Embedding(10, 4, sparse=True).to("foo")
    foo_emb.load_state_dict(cpu_emb.state_dict())
    opts = [torch.optim.SparseAdam(cpu_emb.parameters(), lr=0.1), torch.optim.SparseAdam(foo_emb.parameters(), lr=0.1)]
    for step in range(3):
        idx = (torch.tensor([[1, 2, 4], [4, 3, 9]]) + step) % 10
        for emb, opt, device in ((cpu_emb, opts[0], "cpu"), (foo_emb, opts[1], "foo")):
            opt.zero_grad()
            loss = emb(idx.to(device)).pow(2).sum()
            loss.backward()
            assert emb.weight.grad.layout == torch.sparse_coo
            opt.step()
    torch.testing.assert_close(foo_emb.weight.detach().cpu(), cpu_emb.weight.detach())


def test_sparse_op_errors_are_python_exceptions():
    fs = _coo().to("foo")
    with pytest.raises(RuntimeError):
        torch.mm(fs, torch.randn(4, 2, device="foo"))  # 3 columns against 4 rows
    with pytest.raises(RuntimeError, match="size is inconsistent with indices"):
        torch.sparse_coo_tensor(torch.tensor([[0, 5]]), torch.tensor([1.0, 2.0]), (3,), device="foo",
                                check_invariants=True)


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_sparse_dense_products_and_to_dense_are_queued_not_waited_for(foo, layout):
    torch.manual_seed(0)
    d = torch.randn(5, 4) * (torch.rand(5, 4) > 0.5)
    m = torch.randn(4, 3)
    s = (d.to_sparse() if layout == "coo" else d.to_sparse_csr()).to("foo")
    fm = m.to("foo")
    stream = foo.current_stream()
    foo._sleep(BUSY_MS)
    product = torch.sparse.mm(s, fm)
    dense = s.to_dense()
    assert not stream.query(), "the host waited for the stream"
    torch.testing.assert_close(product.cpu(), d @ m)
    assert torch.equal(dense.cpu(), d)


def test_sparse_results_of_data_dependent_size_wait_for_the_stream(foo):
    s = _coo().to("foo")
    stream = foo.current_stream()
    foo._sleep(BUSY_MS)
    c = s.coalesce()  # its nnz depends on the indices: the host must wait, as on CUDA
    assert stream.query()
    assert c._nnz() == 3


def test_sparse_operators_refuse_tensors_on_another_device_as_cuda():
    sparse = torch.eye(3).to_sparse().to("foo")
    for call in (lambda: torch.sparse.mm(sparse, torch.ones(3, 2)),
                 lambda: sparse + torch.eye(3).to_sparse(),
                 lambda: torch.ones(3, 3, device="foo") + torch.eye(3).to_sparse()):
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            call()


def test_sparse_tensors_on_the_second_device_while_the_first_is_current(foo):
    # Each sparse kernel switches to its tensors' device, as CUDA's generated
    # wrappers do: SparseTensorImpl made its placeholder indices on the
    # current device and refused values on foo:1.
    dense = torch.tensor([[0.0, 2.0], [3.0, 0.0]], device="foo:1")
    coo = dense.to_sparse()
    made = torch.sparse_coo_tensor(torch.tensor([[0, 1]], device="foo:1"), torch.ones(2, device="foo:1"), (3,))
    total = (coo + coo).coalesce()
    assert foo.current_device() == 0
    assert coo.device == made.device == total.device == torch.device("foo:1")
    assert total.to_dense().cpu().tolist() == [[0.0, 4.0], [6.0, 0.0]]
    assert made.to_dense().cpu().tolist() == [1.0, 1.0, 0.0]


# What CUDA's sparse kernels compute from dense operators on the indices and
# values, without waiting for the device (its sum of two sparse tensors
# concatenates their entries; a product with a scalar scales the values).
QUEUED_AS_ON_CUDA = {
    "sparse+sparse": lambda s, t, v: s + t,
    "sparse-sparse": lambda s, t, v: s - t,
    "add_-alpha": lambda s, t, v: s.clone().add_(t, alpha=2),
    "add-out": lambda s, t, v: torch.add(s, t, out=torch.empty(0, layout=torch.sparse_coo, device=s.device)),
    "sparse*scalar": lambda s, t, v: s * 2.5,
    "scalar*sparse": lambda s, t, v: 3 * s,
    "sparse*0-dim": lambda s, t, v: s * v,
    "0-dim*sparse": lambda s, t, v: v * s,
    "mul_-scalar": lambda s, t, v: s.clone().mul_(2),
    "int*float": lambda s, t, v: s.to(torch.int64) * 0.5,
}


@pytest.mark.parametrize("op", QUEUED_AS_ON_CUDA.values(), ids=QUEUED_AS_ON_CUDA.keys())
def test_sparse_sums_and_scalar_products_are_queued_as_on_cuda(foo, op):
    s_cpu = _coo()
    t_cpu = torch.sparse_coo_tensor(torch.tensor([[1, 0], [1, 2]]), torch.tensor([7.0, -2.0]), (2, 3))
    v_cpu = torch.tensor(-1.5)
    s, t, v = s_cpu.to("foo"), t_cpu.to("foo"), v_cpu.to("foo")  # made before the gate: a copy from pageable memory waits
    with held_stream() as still_held:
        got = op(s, t, v)
        assert still_held(), "the host waited for the device"
    want = op(s_cpu, t_cpu, v_cpu)
    assert got.layout == torch.sparse_coo and got.device == s.device and got.dtype == want.dtype
    assert torch.equal(got.to_dense().cpu(), want.to_dense())


def test_sparse_operators_that_wait_for_the_device_are_listed_and_the_queued_ones_not():
    out = run_python_json("""
        import json, torch
        s = torch.sparse_coo_tensor(torch.tensor([[0, 1, 1], [2, 0, 2]]), torch.tensor([3.0, 4.0, 5.0]), (2, 3),
                                    device="foo")
        queued = [s + s, s * 2, s.clone().mul_(2)]
        after_queued = torch.foo.synchronizing_ops()
        s.coalesce()                # its nnz depends on the indices
        s * s                       # so does a product's
        print(json.dumps({"after_queued": after_queued, "after": torch.foo.synchronizing_ops()}))
    """)
    assert out["after_queued"] == []
    assert {"aten::_coalesce", "aten::mul.out"} <= set(out["after"]), out["after"]
