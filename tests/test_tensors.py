"""Tensors on foo: factories, copies in every direction, views, scalars,
resize/set_, the generated methods, and bad input."""

import pytest
import torch

from conftest import held_stream


def test_factories(foo):
    assert torch.empty(3, 4, device="foo").device == torch.device("foo:0")
    assert torch.zeros(2, 3, device="foo:1").cpu().eq(0).all()
    assert torch.ones(5, dtype=torch.int32, device="foo").cpu().tolist() == [1] * 5
    assert torch.full((2,), 7.5, device="foo").cpu().tolist() == [7.5, 7.5]
    assert torch.arange(5, device="foo").cpu().tolist() == [0, 1, 2, 3, 4]
    t = torch.tensor([[1.0, 2.0], [3.0, 4.0]], device="foo")
    assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert torch.empty(0, device="foo").numel() == 0
    cl = torch.empty(2, 3, 4, 5, device="foo", memory_format=torch.channels_last)
    assert cl.is_contiguous(memory_format=torch.channels_last) and not cl.is_contiguous()


def test_printing_shows_values_and_device(foo):
    t = torch.tensor([1.5, -2.0], device="foo:1")
    assert repr(t) == "tensor([ 1.5000, -2.0000], device='foo:1')"
    assert "device='foo:0'" in repr(torch.zeros(2, 2, dtype=torch.int64, device="foo"))


def test_generated_methods(foo):
    t = torch.randn(3).foo()
    assert t.is_foo and t.device == torch.device("foo:0")
    assert torch.randn(2).foo(1).device == torch.device("foo:1")
    m = torch.nn.Linear(2, 2).foo()
    assert m.weight.is_foo
    storage = t.untyped_storage()
    assert storage.device == torch.device("foo:0") and storage.nbytes() == 12
    assert torch.ones(2).untyped_storage().foo().device.type == "foo"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bool, torch.bfloat16])
def test_round_trip_every_direction(foo, dtype):
    src = (torch.arange(24).reshape(4, 6) % 3).to(dtype)
    on0 = src.to("foo")
    on0b = on0.clone()
    on1 = on0.to("foo:1")
    assert on1.device == torch.device("foo:1")
    assert torch.equal(on1.cpu(), src) and torch.equal(on0b.cpu(), src)


def test_dtype_conversion_and_non_contiguous(foo):
    src = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    t = src.to("foo", dtype=torch.float64)
    assert t.dtype == torch.float64 and torch.equal(t.cpu(), src.double())
    # Non-contiguous sources and destinations, on both sides.
    assert torch.equal(t.t().cpu(), src.double().t())
    assert torch.equal(src.t().to("foo").cpu(), src.t())
    dst = torch.zeros(6, 8, device="foo")[:, ::2]
    dst.copy_(src.t())
    assert torch.equal(dst.cpu(), src.t())
    host = torch.zeros(8, 6)[::2]
    host.copy_(t[:, :].to(torch.float32))
    assert torch.equal(host, src)
    across = torch.zeros(6, 4, device="foo:1", dtype=torch.int32)
    across.copy_(t.t())
    assert torch.equal(across.cpu(), src.t().int())


def test_copy_broadcasts_and_refuses_incompatible_shapes(foo):
    dst = torch.zeros(3, 4, device="foo")
    dst.copy_(torch.arange(4.0))
    assert dst.cpu().tolist() == [[0.0, 1.0, 2.0, 3.0]] * 3
    with pytest.raises(RuntimeError, match="must match"):
        dst.copy_(torch.ones(5, device="foo"))


@pytest.mark.parametrize("view", [torch._neg_view, torch.conj], ids=["negated", "conjugated"])
def test_copies_into_and_out_of_negated_and_conjugated_views(foo, view):
    # A view's memory holds the negation (conjugate) of its values; every
    # copy direction moves values, as CPU's copy_ does.
    values = torch.tensor([1 + 2j, -3 + 0.5j, 4 - 1j])

    def plain(t):
        return t.cpu().resolve_neg().resolve_conj()

    into = {"pageable": view(torch.zeros(3, dtype=values.dtype, device="foo")),
            "pinned": view(torch.zeros(3, dtype=values.dtype, device="foo")),
            "device": view(torch.zeros(3, dtype=values.dtype, device="foo"))}
    foo._sleep(200)  # every copy below queues behind a busy stream
    into["pageable"].copy_(values)
    into["pinned"].copy_(values.pin_memory(), non_blocking=True)  # the pinned source is freed at once
    into["device"].copy_(values.foo())
    for name, t in into.items():
        assert torch.equal(plain(t), values), name
    source = view(values.foo())
    host = view(torch.zeros(3, dtype=values.dtype))
    host.copy_(source)
    # Into a view on the host from plain foo memory: the host resolves it.
    plain_source = values.foo()
    host_view = view(torch.zeros(3, dtype=values.dtype))
    host_view.copy_(plain_source)
    assert torch.equal(plain(host_view), values)
    assert torch.equal(torch.empty_like(values).copy_(source), view(values).resolve_neg().resolve_conj())
    assert torch.equal(plain(host), view(values).resolve_neg().resolve_conj())


def test_scalars_wait_for_queued_work(foo):
    t = torch.zeros(1, device="foo")
    foo._sleep(200)
    t.fill_(3.0)
    assert t.item() == 3.0                      # waited for the fill behind the sleep
    assert foo.current_stream().query()
    foo._sleep(100)
    t.add_(1)
    assert t.tolist() == [4.0] and t.cpu().item() == 4.0


ITEM_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
               torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128, torch.uint16, torch.uint32,
               torch.float8_e4m3fn, torch.float8_e5m2, torch.complex32]


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
@pytest.mark.parametrize("dtype", ITEM_DTYPES, ids=str)
def test_item_reads_the_value_as_cpu_does(foo, dtype):
    source = torch.tensor([-1.75, 3.0, 2.5, 0.0]) if not dtype.is_complex else torch.tensor([1.5 - 2.0j, -0.5 + 1.0j])
    host = source.to(dtype)
    device = host.to("foo")
    for i in range(host.numel()):
        want, got = host[i].item(), device[i].item()
        assert type(got) is type(want) and got == want, (dtype, i, want, got)
    if dtype.is_complex and dtype != torch.complex32:
        assert device[0].conj().item() == host[0].conj().item()     # the conjugate bit, resolved
        assert device[0].conj().imag.item() == host[0].conj().imag.item()


def test_non_blocking_copy_to_pinned_memory_is_asynchronous(foo):
    x = torch.full((1 << 16,), 5.0, device="foo")
    pinned = torch.zeros(1 << 16).pin_memory()
    assert pinned.is_pinned() and not torch.zeros(4).is_pinned()
    with held_stream() as still_held:
        pinned.copy_(x, non_blocking=True)      # a host that waited would wait for the gate, and fail
        assert pinned[0].item() == 0.0          # the data has not arrived yet
        assert still_held() and not foo.current_stream().query()
    foo.synchronize()
    assert pinned.eq(5.0).all()


def test_non_blocking_copy_from_pinned_memory_and_block_reuse(foo):
    src = torch.full((1 << 16,), 2.0).pin_memory()
    ptr = src.data_ptr()
    dst = torch.empty(1 << 16, device="foo")
    with held_stream() as still_held:
        dst.copy_(src, non_blocking=True)
        del src
        again = torch.empty(1 << 16).pin_memory()
        assert again.data_ptr() != ptr          # still used by the queued copy
        assert still_held()
    foo.synchronize()
    assert dst.cpu().eq(2.0).all()


def test_non_blocking_converting_copy_from_pinned_memory_reads_it_in_stream_order(foo):
    # As CUDA's: with non_blocking, the dtype is converted on the device, so
    # the host neither waits for the busy stream nor reads the pinned source
    # at the call: a change made after the call, without synchronizing, is
    # what the copy sees (the race a CUDA loader that reuses its pinned
    # batch too early has).
    batch = torch.full((1 << 16,), 1, dtype=torch.uint8).pin_memory()
    with held_stream() as still_held:
        dst = batch.to("foo", dtype=torch.float32, non_blocking=True)
        assert still_held() and not foo.current_stream().query()
        batch.fill_(2)
    assert dst.dtype == torch.float32 and dst.cpu().eq(2.0).all()
    # From complex, the warning CPU and CUDA give is a Python warning at the
    # call, and the real part arrives.
    z = torch.full((4,), 1 + 2j).pin_memory()
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        real = z.to("foo", dtype=torch.float32, non_blocking=True)
    assert real.cpu().tolist() == [1.0] * 4
    # Blocking, the host converts at the call, as CUDA's does.
    batch = torch.full((4,), 3, dtype=torch.uint8).pin_memory()
    dst = batch.to("foo", dtype=torch.float32)
    batch.fill_(4)
    assert dst.cpu().tolist() == [3.0] * 4


@pytest.mark.parametrize("layout", ["transposed", "channels-last"])
def test_pinned_round_trip_into_another_layout_reads_in_stream_order(foo, layout):
    # A pinned buffer filled by a queued copy, then copied into a foo tensor
    # of another layout: as on CUDA (the source is contiguous and of the
    # destination's dtype, so the host does not touch it), its bytes are
    # read when the stream gets there, after the fill.
    a = torch.zeros(2, 3, 4, 5, device="foo")
    pinned = torch.empty(2, 3, 4, 5).pin_memory()
    if layout == "transposed":
        dst = torch.empty(5, 4, 3, 2, device="foo").permute(3, 2, 1, 0)
    else:
        dst = torch.empty(2, 3, 4, 5, device="foo", memory_format=torch.channels_last)
    with held_stream() as still_held:
        a.fill_(7.0)
        pinned.copy_(a, non_blocking=True)
        dst.copy_(pinned, non_blocking=True)    # a host that read pinned now would wait for the gate, and fail
        assert still_held()
    assert torch.equal(dst.cpu(), torch.full((2, 3, 4, 5), 7.0))


def test_copy_to_pageable_memory_returns_complete_data(foo):
    x = torch.ones(1000, device="foo")
    foo._sleep(200)
    x.mul_(3)
    assert x.cpu().eq(3).all()  # .cpu() waited for the queued work


def test_resize_and_set(foo):
    t = torch.arange(4.0, device="foo")
    t.resize_(2, 4)
    assert t.shape == (2, 4) and t[0].cpu().tolist() == [0.0, 1.0, 2.0, 3.0]
    s = torch.empty(0, device="foo")
    s.set_(t)
    assert s.data_ptr() == t.data_ptr() and s.shape == t.shape
    v = torch.empty(0, device="foo").set_(t.untyped_storage(), 1, (2,), (2,))
    assert v.cpu().tolist() == t.flatten()[[1, 3]].cpu().tolist()
    storage = torch.arange(3.0, device="foo").untyped_storage()
    storage.resize_(24)
    assert storage.nbytes() == 24


def test_views_share_memory(foo):
    t = torch.arange(12.0, device="foo").reshape(3, 4)
    v = t[1:, ::2]
    assert v.data_ptr() == t.data_ptr() + 4 * 4
    v.fill_(-1)
    assert t.cpu()[1].tolist() == [-1.0, 5.0, -1.0, 7.0]
    u = t.unfold(1, 2, 2)   # a view computed by the fallback
    assert u.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
    assert torch.equal(u.cpu(), t.cpu().unfold(1, 2, 2))


@pytest.mark.parametrize("size", [(-1,), (2, -3), (1 << 62, 1 << 62)])
def test_bad_sizes_are_clear_errors_and_leak_nothing(foo, size):
    before = foo.memory_allocated()
    with pytest.raises(RuntimeError, match="negative|overflow|too large|Storage size calculation"):
        torch.empty(size, device="foo")
    assert foo.memory_allocated() == before


def test_mixing_devices_is_refused_as_on_cuda(foo):
    a = torch.ones(3, device="foo")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device.*foo:0 and cpu"):
        torch.atan2(a, torch.ones(3))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.atan2(a, torch.ones(3, device="foo:1"))
    assert torch.atan2(a, torch.tensor(1.0)).cpu().allclose(torch.full((3,), 0.7853982))  # 0-dim CPU is fine


def test_a_cpu_tensor_is_never_written_by_a_foo_operator(foo):
    # A CPU 0-dim tensor passes as a scalar input, not as an output: CUDA
    # refuses it as out=, and foo would have written a copy of it.
    x = torch.tensor([1.0, 2.0, 4.0], device="foo")
    for call in (lambda out: torch.std(x, 0, out=out), lambda out: torch.var(x, 0, out=out)):
        out = torch.tensor(0.0)
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device.*foo:0 and cpu"):
            call(out)
        assert out.item() == 0.0


def test_fill_from_a_value_on_another_device_reads_it_as_a_number_as_on_cuda(foo):
    value = torch.arange(6.0, device="foo")[5]
    foo._sleep(100)  # the value is read once the stream reaches it
    for cpu in (torch.tensor(1.0), torch.zeros(3)):
        assert cpu.fill_(value) is cpu
        assert torch.equal(cpu, torch.full_like(cpu, 5.0))
    cpu = torch.zeros(4)
    cpu.index_fill_(0, torch.tensor([0, 2]), value)
    assert cpu.tolist() == [5.0, 0.0, 5.0, 0.0]
    on_foo = torch.zeros(3, device="foo:1")
    on_foo.fill_(value)                     # foo:0's value into a foo:1 tensor
    assert on_foo.cpu().tolist() == [5.0, 5.0, 5.0]
    with pytest.raises(RuntimeError, match="only supports a 0-dimensional value tensor"):
        torch.zeros(3).fill_(torch.ones(2, device="foo"))


def test_bernoulli_takes_probabilities_from_the_cpu_as_cuda_does(foo):
    p = torch.tensor([1.0, 0.0, 1.0, 0.0])
    with held_stream() as still_held:
        x = torch.empty(4, device="foo").bernoulli_(p)
        p.fill_(0.5)  # after the call, before the kernel runs: it still sees the call's probabilities
        assert still_held()
    assert x.cpu().tolist() == [1.0, 0.0, 1.0, 0.0]


def test_linspace_and_logspace_with_cpu_tensor_ends_and_foo_out(foo):
    out = torch.empty(2, 3, device="foo")
    torch.linspace(torch.tensor(0.0), 1.0, 6, out=out)
    assert torch.allclose(out.cpu(), torch.linspace(0.0, 1.0, 6).view(2, 3))
    out = torch.empty(4, device="foo")
    torch.logspace(0.0, torch.tensor(3.0), 4, out=out)
    assert torch.allclose(out.cpu(), torch.tensor([1.0, 10.0, 100.0, 1000.0]))


def test_huge_allocation_is_out_of_memory(foo):
    before = foo.memory_allocated()
    with pytest.raises(torch.OutOfMemoryError, match="foo out of memory"):
        torch.empty(1 << 40, dtype=torch.uint8, device="foo")
    assert foo.memory_allocated() == before


def test_set_with_no_arguments_empties_the_tensor_and_frees_its_memory(foo):
    before = foo.memory_allocated(1)
    x = torch.ones(1 << 20, device="foo:1")
    assert foo.memory_allocated(1) == before + (4 << 20)
    x.set_()
    assert x.shape == (0,) and x.device == torch.device("foo", 1)
    assert x.untyped_storage().nbytes() == 0 and x.untyped_storage().device == x.device
    assert foo.memory_allocated(1) == before


def test_set_refuses_negative_strides(foo):
    a = torch.zeros(2, device="foo")
    with pytest.raises(RuntimeError, match="Storage size calculation overflowed"):
        a.set_(torch.arange(6.0, device="foo").untyped_storage(), 4, (2,), (-2,))


def test_fill_with_an_element_of_itself_but_not_copy(foo):
    # fill_, masked_fill_ and index_fill_ take a 0-dim tensor value as a
    # number before writing (as CPU and CUDA do), so it may be one of the
    # elements they overwrite; copy_ of one element over the whole tensor
    # overlaps partly and raises, as on CPU and CUDA.
    for device in ("cpu", "foo"):
        t = torch.arange(3.0, device=device)
        foo._sleep(50)
        t.fill_(t[1])
        assert t.tolist() == [1.0, 1.0, 1.0], device
        t = torch.arange(3.0, device=device)
        t.masked_fill_(t > 0, t[0])
        assert t.tolist() == [0.0, 0.0, 0.0], device
        t = torch.arange(3.0, device=device)
        t.index_fill_(0, torch.tensor([0, 2], device=device), t[1])
        assert t.tolist() == [1.0, 1.0, 1.0], device
        with pytest.raises(RuntimeError, match="refer to a single memory location"):
            t.copy_(t[1])


def test_range_factories_fill_an_out_of_another_shape_in_place(foo):
    # As CPU and CUDA: an out= with the range's element count keeps its
    # shape and strides and takes the values in logical order.
    for device in ("cpu", "foo"):
        base = torch.zeros(3, 4, device=device)
        torch.arange(6.0, out=base[:, ::2])
        assert base.tolist() == [[0.0, 0.0, 1.0, 0.0], [2.0, 0.0, 3.0, 0.0], [4.0, 0.0, 5.0, 0.0]], device
        out = torch.zeros(2, 3, device=device)
        torch.linspace(0, 5, 6, out=out)
        assert out.shape == (2, 3) and out.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], device
        out = torch.zeros(3, 1, device=device)
        torch.logspace(0, 2, 3, out=out)
        assert out.shape == (3, 1) and out.flatten().tolist() == [1.0, 10.0, 100.0], device
    # On a busy stream: queued in order, the host not waiting; a read
    # queued before sees the old values, one queued after the new.
    out = torch.full((2, 3), 7.0, device="foo")
    with held_stream() as still_held:
        before = out * 1
        torch.arange(6.0, out=out)
        after = out + 0
        assert still_held() and not foo.current_stream().query()
    assert before.tolist() == [[7.0] * 3] * 2 and after.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_empty_views_keep_their_storage_offset(foo):
    for device in ("cpu", "foo"):
        c = torch.zeros(5, dtype=torch.complex64, device=device)
        assert torch.view_as_real(c[3:3]).storage_offset() == 6, device
        assert torch.view_as_complex(torch.zeros(6, 2, device=device)[4:4]).storage_offset() == 4, device
