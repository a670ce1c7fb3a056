"""Random numbers on foo: seeding, state, generators, random operators."""

import json

import pytest
import torch

from conftest import held_stream, run_python


def _seeded_numbers():
    torch.manual_seed(1234)
    return [torch.randn(4, device="foo").cpu().tolist(), torch.rand(3, device="foo:1").cpu().tolist()]


def test_same_seed_same_numbers_every_run():
    # A fresh process, and this one after whatever its earlier tests drew.
    fresh = run_python("""
        import json, torch
        torch.manual_seed(1234)
        print(json.dumps([torch.randn(4, device="foo").cpu().tolist(), torch.rand(3, device="foo:1").cpu().tolist()]))
    """)
    torch.rand(5, device="foo:1")
    assert json.loads(fresh) == _seeded_numbers() == _seeded_numbers()


def test_torch_manual_seed_seeds_foo(foo):
    torch.manual_seed(7)
    a = torch.rand(5, device="foo")
    foo.manual_seed(7)
    b = torch.rand(5, device="foo")
    assert torch.equal(a.cpu(), b.cpu())
    assert foo.initial_seed() == 7
    foo.manual_seed_all(9)
    assert [foo.initial_seed()] == [9]
    with foo.device(1):
        assert foo.initial_seed() == 9


def test_state_save_and_restore_replays(foo):
    state = foo.get_rng_state()
    first = torch.randn(6, device="foo")
    foo.set_rng_state(state)
    assert torch.equal(torch.randn(6, device="foo").cpu(), first.cpu())
    states = foo.get_rng_state_all()
    assert len(states) == 2 and all(s.dtype == torch.uint8 for s in states)
    foo.set_rng_state_all(states)
    with pytest.raises(RuntimeError, match="wrong size"):
        foo.set_rng_state(torch.zeros(3, dtype=torch.uint8))


def test_fork_rng_restores_foo(foo):
    before = foo.get_rng_state()
    with torch.random.fork_rng(devices=[0], device_type="foo"):
        torch.rand(10, device="foo")
    assert torch.equal(foo.get_rng_state(), before)


def test_explicit_generators(foo):
    g1, g2 = torch.Generator(device="foo"), torch.Generator(device="foo")
    g1.manual_seed(3)
    g2.manual_seed(3)
    assert g1.device == torch.device("foo:0")
    assert torch.equal(torch.rand(4, device="foo", generator=g1).cpu(),
                       torch.rand(4, device="foo", generator=g2).cpu())
    with pytest.raises(RuntimeError, match="generator"):
        torch.rand(4, device="foo", generator=torch.Generator())


def test_numbers_do_not_depend_on_which_stream_runs_first(foo):
    foo.manual_seed(5)
    s1, s2 = foo.Stream(), foo.Stream()
    with held_stream(s1) as still_held:
        with foo.stream(s1):
            a = torch.rand(3, device="foo")
        with foo.stream(s2):
            b = torch.rand(3, device="foo")    # runs first, launched second
        s2.synchronize()
        assert still_held() and not s1.query()
    foo.synchronize()
    foo.manual_seed(5)
    assert torch.equal(a.cpu(), torch.rand(3, device="foo").cpu())
    assert torch.equal(b.cpu(), torch.rand(3, device="foo").cpu())


def test_random_operators_run_on_foo(foo):
    foo.manual_seed(0)
    n = 100_000
    u = torch.empty(n, device="foo").uniform_(2, 3)
    assert u.is_foo and 2 <= u.min().item() and u.max().item() < 3
    x = torch.empty(n, device="foo").normal_(1.0, 2.0)
    assert abs(x.mean().item() - 1.0) < 0.05 and abs(x.std().item() - 2.0) < 0.05
    bern = torch.bernoulli(torch.full((n,), 0.3, device="foo"))
    assert abs(bern.mean().item() - 0.3) < 0.01
    perm = torch.randperm(50, device="foo")
    assert perm.is_foo and sorted(perm.cpu().tolist()) == list(range(50))
    picks = torch.multinomial(torch.tensor([0.0, 1.0, 0.0, 1.0], device="foo"), 2)
    assert sorted(picks.cpu().tolist()) == [1, 3]
    dropped = torch.nn.functional.dropout(torch.ones(n, device="foo"), p=0.25)
    kept = dropped.ne(0).float().mean().item()
    assert abs(kept - 0.75) < 0.01 and dropped.max().item() == pytest.approx(1 / 0.75)
    assert torch.equal(torch.nn.functional.dropout(torch.ones(4, device="foo"), 0.5, training=False).cpu(),
                       torch.ones(4))


# Random123's published known-answer vectors for Philox4x32-10:
# (counter, key) -> output.
PHILOX_KATS = [
    ([0, 0, 0, 0], [0, 0], [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
    ([0xFFFFFFFF] * 4, [0xFFFFFFFF] * 2, [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
    ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0],
     [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]),
]


@pytest.mark.parametrize("counter, key, expected", PHILOX_KATS)
def test_philox_matches_the_published_known_answers(counter, key, expected):
    from torch_foo import _C

    assert list(_C._philox4x32_10(counter, key)) == expected


def test_each_random_kernel_is_seeded_by_philox_of_seed_and_offset(foo):
    # The n-th random kernel after manual_seed(s) draws from a CPU generator
    # seeded with the low 64 bits of Philox4x32-10(counter=n, key=s).
    from torch_foo import _C

    def kernel_seed(seed, n):
        out = _C._philox4x32_10([n, 0, 0, 0], [seed & 0xFFFFFFFF, seed >> 32])
        return (out[1] << 32) | out[0]

    seed = 2**40 + 7
    torch.foo.manual_seed(seed)
    first, second = torch.rand(5, device="foo"), torch.randn(3, device="foo")
    assert first.cpu().equal(torch.rand(5, generator=torch.Generator().manual_seed(kernel_seed(seed, 0))))
    assert second.cpu().equal(torch.randn(3, generator=torch.Generator().manual_seed(kernel_seed(seed, 1))))


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_recomputes_with_the_same_random_numbers(foo, reentrant):
    # torch.utils.checkpoint saves and restores the device's RNG state only
    # if the device module says it is initialized (torch.cuda._initialized):
    # otherwise the recomputed dropout draws another mask and every gradient
    # is wrong.
    from torch.utils.checkpoint import checkpoint

    torch.manual_seed(0)
    block = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Dropout(0.5), torch.nn.Linear(16, 16)).to("foo")
    x = torch.randn(8, 16, device="foo", requires_grad=True)
    assert foo._initialized
    grads = []
    for use_checkpoint in (False, True):
        torch.manual_seed(1)
        y = checkpoint(block, x, use_reentrant=reentrant) if use_checkpoint else block(x)
        x.grad = None
        block.zero_grad()
        y.square().sum().backward()
        grads.append([x.grad.cpu()] + [p.grad.cpu() for p in block.parameters()])
    for plain, checkpointed in zip(*grads):
        torch.testing.assert_close(checkpointed, plain)


def test_a_foo_generator_for_cpu_tensors_is_refused_as_cpu_refuses_it():
    g = torch.Generator(device="foo")
    for call in (lambda: torch.rand(3, generator=g), lambda: torch.randperm(4, generator=g),
                 lambda: torch.empty(3).normal_(generator=g)):
        with pytest.raises(RuntimeError, match="Expected a 'cpu' device type for generator but found 'foo'"):
            call()
