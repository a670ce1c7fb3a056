"""foo's executors run kernels on OpenMP teams of their own (ATen's intra-op
threads). libgomp counts every team's threads, idle or not, and once they
outnumber the cores makes all of them sleep between parallel regions, CPU
PyTorch's own included; so an executor that has gone idle gives its team
back, and a host thread blocked on the device while an executor may hold a
team gives back its own."""

from conftest import run_python_json

# Run first in each child: a foo tensor made and the device left idle.
PROLOGUE = """
    import json, os, time, torch
    torch.set_num_threads(2)

    def threads():
        return len(os.listdir("/proc/self/task"))

    x = torch.randn(512, 512, device="foo")
    torch.foo.synchronize()
    time.sleep(0.3)

    def matmul_then_sleep(ms):
        # Polled for the matmul: that leaves the work to an executor (a
        # waiting host would run it itself), and the sleep queued behind it
        # is that executor's next kernel, so a synchronization blocks.
        x @ x                   # a parallel kernel: its executor holds a team
        ran = torch.foo.Event()
        ran.record()
        torch.foo._sleep(ms)
        while not ran.query():
            time.sleep(0.001)
"""


def test_an_idle_executor_gives_its_openmp_threads_back():
    idle, busy, after = run_python_json(PROLOGUE + """
    idle = threads()
    x @ x                   # a parallel kernel: its executor starts a team of 2
    torch.foo._sleep(300)   # queued behind it, keeps that executor busy
    time.sleep(0.1)
    busy = threads()
    torch.foo.synchronize()
    time.sleep(0.3)         # far beyond the 2 ms an executor sleeps before giving it back
    print(json.dumps([idle, busy, threads()]))
    """)
    assert busy == idle + 1, "the matmul's team should add one OpenMP thread while its executor is busy"
    assert after <= idle, f"{after - idle} OpenMP thread(s) of an idle executor's team still exist"


def test_a_host_blocked_while_an_executor_holds_a_team_gives_its_own_back():
    before, after = run_python_json(PROLOGUE + """
    cpu = torch.randn(512, 512)
    cpu @ cpu               # CPU work: the main thread's own team of 2
    matmul_then_sleep(200)  # an executor holds a team too
    time.sleep(0.02)        # the sleep has begun
    before = threads()
    torch.foo.synchronize() # blocks: the main thread's team is given back
    print(json.dumps([before, threads()]))
    """)
    assert after == before - 1


def test_a_host_alone_with_a_team_keeps_it():
    # No executor has run a parallel kernel for 300 ms: the main thread's
    # team slows no one, and giving it back would only cost a new one.
    before, after = run_python_json(PROLOGUE + """
    cpu = torch.randn(512, 512)
    cpu @ cpu
    before = threads()
    torch.foo._sleep(50)
    torch.foo.synchronize()
    print(json.dumps([before, threads()]))
    """)
    assert after == before


def test_a_given_back_team_keeps_the_threads_setting():
    # Three threads on a two-core machine: not the default, so a setting
    # lost with the team would show.
    out = run_python_json("""
        import json, torch
        torch.set_num_threads(3)
        a = torch.randn(512, 512)
        a @ a
        torch.foo._sleep(50)
        torch.foo.synchronize()  # gives the main thread's team back
        ok = torch.allclose(a @ a, (a.foo() @ a.foo()).cpu(), atol=1e-3)
        print(json.dumps([torch.get_num_threads(), ok]))
    """)
    assert out == [3, True]


def test_a_host_gives_its_team_back_at_most_once_per_100_ms():
    # A loop of CPU work and synchronizations would otherwise pay for a new
    # team (several ms) in every iteration.
    counts = run_python_json(PROLOGUE + """
    cpu = torch.randn(512, 512)
    counts = []
    for pause in (0.0, 0.0, 0.3):
        time.sleep(pause)
        cpu @ cpu               # the main thread's team, started again if it was given back
        matmul_then_sleep(10)   # an executor holds a team of its own; the host blocks on the sleep
        with_team = threads()
        torch.foo.synchronize()
        counts.append(with_team - threads())
    print(json.dumps(counts))
    """)
    assert counts == [1, 0, 1], "given back, kept (within 100 ms of the last), given back again"
