"""foo's executors run kernels on OpenMP teams of their own (ATen's intra-op
threads). libgomp counts every team's threads, idle or not, and once they
outnumber the cores makes all of them sleep between parallel regions, CPU
PyTorch's own included; so an executor that has gone idle gives its team
back, and a host thread blocked on the device while an executor may hold a
team gives back its own."""

import pytest

from conftest import run_python_json

# Run first in each child: the device initialized and left idle, with no
# team. `until` waits for what other threads do in their own time (an
# executor's idle hook runs after 100 ms without work); its bound only keeps
# a broken build from hanging. `matmul_then_hold` leaves an executor holding
# a team, its stream held shut by a gate; `open_later` opens that gate from
# another thread once `when()` holds, noting the thread count (without its
# own thread) while the executor still holds its team.
PROLOGUE = """
    import json, os, threading, time, torch
    torch.set_num_threads(2)

    def threads():
        return len(os.listdir("/proc/self/task"))

    def until(when, seconds=30.0):
        deadline = time.monotonic() + seconds
        while not when() and time.monotonic() < deadline:
            time.sleep(0.002)

    def matmul_then_hold():
        x = torch.randn(512, 512, device="foo")
        x @ x                         # a parallel kernel: its executor starts a team
        ran = torch.foo.current_stream().record_event()
        gate = torch.foo._gate()      # queued behind it, keeps that executor busy
        until(ran.query)              # the matmul has run
        return gate

    def open_later(gate, when, seconds=30.0):
        def run():
            until(when, seconds)
            opener.seen = threads() - 1
            gate.open()
        opener = threading.Thread(target=run)
        opener.start()
        return opener

    torch.foo.init()
    no_teams = threads()
"""


def test_an_idle_executor_gives_its_openmp_threads_back():
    idle, busy, after = run_python_json(PROLOGUE + """
    gate = matmul_then_hold()
    busy = threads()
    gate.open()
    torch.foo.synchronize()
    until(lambda: threads() <= no_teams)
    print(json.dumps([no_teams, busy, threads()]))
    """)
    assert busy == idle + 1, "the matmul's team should add one OpenMP thread while its executor is busy"
    assert after <= idle, f"{after - idle} OpenMP thread(s) of an idle executor's team still exist"


@pytest.mark.slow  # a child process; the quick run keeps the first
def test_a_host_blocked_while_an_executor_holds_a_team_gives_its_own_back():
    before, after = run_python_json(PROLOGUE + """
    cpu = torch.randn(512, 512)
    cpu @ cpu                     # CPU work: the main thread's own team of 2
    gate = matmul_then_hold()
    before = threads()
    opener = open_later(gate, lambda: threads() <= before)  # the opener counts itself
    torch.foo.synchronize()       # blocks: the main thread's team is given back
    opener.join()
    print(json.dumps([before, opener.seen]))
    """)
    assert after == before - 1


@pytest.mark.slow  # a child process; the quick run keeps the first
def test_a_host_alone_with_a_team_keeps_it():
    # No executor has run a parallel kernel: the main thread's team slows
    # no one, and giving it back would only cost a new one.
    before, after = run_python_json(PROLOGUE + """
    cpu = torch.randn(512, 512)
    cpu @ cpu
    before = threads()
    torch.foo._sleep(50)
    torch.foo.synchronize()
    print(json.dumps([before, threads()]))
    """)
    assert after == before


@pytest.mark.slow  # a child process; the quick run keeps the first
def test_a_given_back_team_keeps_the_threads_setting():
    # Three threads on a two-core machine: not the default, so a setting
    # lost with the team would show.
    out = run_python_json(PROLOGUE + """
    torch.set_num_threads(3)
    a = torch.randn(512, 512)
    a @ a
    gate = matmul_then_hold()
    before = threads()
    opener = open_later(gate, lambda: threads() <= before)
    torch.foo.synchronize()       # gives the main thread's team back
    opener.join()
    ok = torch.allclose(a @ a, (a.foo() @ a.foo()).cpu(), atol=1e-3)
    print(json.dumps([opener.seen < before, torch.get_num_threads(), ok]))
    """)
    assert out == [True, 3, True]


@pytest.mark.slow  # a child process; the quick run keeps the first
def test_a_host_gives_its_team_back_at_most_once_per_100_ms():
    # A loop of CPU work and synchronizations would otherwise pay for a new
    # team (several ms) in every iteration. The second iteration comes
    # within 100 ms of the first unless the machine is loaded past that:
    # the host's clock says whether to expect the team kept.
    counts, gap = run_python_json(PROLOGUE + """
    cpu = torch.randn(512, 512)
    counts, blocked_at = [], []
    for pause in (0.0, 0.0, 0.3):
        time.sleep(pause)
        cpu @ cpu                 # the main thread's team, started again if it was given back
        gate = matmul_then_hold()
        with_team = threads()
        if len(counts) == 1:      # kept: nothing to wait for but the host blocking a while
            opener = open_later(gate, lambda: False, seconds=0.02)
        else:
            opener = open_later(gate, lambda: threads() <= with_team)
        blocked_at.append(time.monotonic())
        torch.foo.synchronize()
        opener.join()
        counts.append(with_team - opener.seen)
    print(json.dumps([counts, blocked_at[1] - blocked_at[0]]))
    """)
    assert counts[0] == 1 and counts[2] == 1, f"given back, then again 300 ms later: {counts}"
    if gap < 0.09:
        assert counts[1] == 0, f"given back again {gap * 1e3:.0f} ms after the last time"
