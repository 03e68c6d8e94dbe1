"""Each row of the category table (stalldiag/diagnosis/category.py), on a saved capture of a real run.

The root cause decides: a lock holder reading slow storage is storage I/O, a
child in D state is storage I/O; a weak root (computing, sleeping, stopped)
leaves the category to the first link that explains the wait better (a
collective, a child program, a lock the user's code takes).  The summary names
that first link when it is of another category.
"""
import pytest

from stalldiag.capture import load_report
from stalldiag.diagnosis import category as table
from stalldiag.diagnosis.threads import FRAME_REFINES, THREAD_WAIT_KINDS
from stalldiag.report import build_report

from helpers import CAPTURES


def replay(name):
    return build_report(load_report(str(CAPTURES / (name + ".json"))))


# capture, category, the summary starts with, the chain's kinds (focus first)
ROWS = [
    # decisive roots name the category wherever they sit; the first link is said
    ("lock_holder_slow_disk", "io", "Blocked on storage I/O, through a lock:", ["lock", "io"]),
    ("child_shell_slow_reader", "io", "Blocked on storage I/O, through a child program:", ["child", "child", "io"]),
    ("gpu_straggler", "cuda", "Waiting on GPU kernels, through a collective:", ["cuda", "cuda"]),
    ("producer_stuck_read", "io", "Blocked on storage I/O:", ["queue-get", "io"]),
    # a peer that sleeps: its kind (a pipe to another process is not a boundary)
    ("mp_connection", "sleep", "Waiting on a thread that sleeps", ["ipc", "sleep"]),
    # weak roots under a boundary: the boundary's category
    ("gloo_hang", "collective", "Waiting in a distributed collective:", ["collective", "sleep"]),
    ("barrier_party_missing", "collective", "Waiting in a distributed collective:", ["collective"]),
    ("gpu_ddp_stopped_rank", "collective", "Waiting in a distributed collective:", ["cuda", "stopped"]),
    ("wait_child", "subprocess", "Waiting on a child program:", ["child", "sleep"]),
    # no boundary on the way: the root's own
    ("thread_join", "cpu", "Busy computing on the CPU:", ["thread-join", "cpu"]),
    ("jit_script_deep", "compilation", "Compiling:", ["compile"]),
    ("gil_held_by_regex", "cpu", "Busy computing on the CPU:", ["lock", "cpu"]),
    ("stale_lock_filelock", "locks", "Blocked on a stale lock file:", ["sleep"]),
    ("event_loop_lost_wakeup", "locks", "Blocked on a lock:", ["loop-wakeup"]),
    ("event_loop_idle_server", "sleep", "Sleeping (idle by design):", ["poll"]),
    # mechanisms: a deadlock is a lock wait whatever the chain's kinds
    ("deadlock", "locks", "Lock-order deadlock:", ["lock", "lock"]),
    ("fork_under_mp_lock", "locks", "Deadlock through a lock:", ["child", "lock"]),
]


@pytest.mark.parametrize("name,category,head,kinds", ROWS, ids=[r[0] for r in ROWS])
def test_category_row(name, category, head, kinds):
    report = replay(name)
    verdict = report["verdict"]
    assert verdict["category"] == category, verdict["summary"]
    assert verdict["summary"].startswith(head), verdict["summary"]
    assert [step["kind"] for step in report["chain"]] == kinds, report["chain_text"]


def test_a_forked_child_does_not_hold_what_its_parent_held_at_fork():
    """The child's stack starts with the parent's frames up to Popen._launch, `with lock:` among
    them; the lock (in shared memory) is the parent's: a cycle across processes, not a
    self-deadlock."""
    report = replay("fork_under_mp_lock")
    summaries = [f["summary"] for f in report["findings"]]
    assert not any("self-deadlock" in s for s in summaries), summaries
    deadlock = next(f for f in report["findings"] if f["kind"] == "deadlock")
    parent = report["chain"][0]
    assert "pid %d" % parent["pid"] in deadlock["summary"] and "child.join()" in deadlock["summary"]


def test_every_kind_a_thread_can_have_is_a_root_of_the_table():
    kinds = set(FRAME_REFINES) | set(THREAD_WAIT_KINDS) | {
        "cpu", "io", "network", "lock", "sleep", "poll", "child", "pipe", "ipc", "tty", "stopped", "frozen",
        "exited", "other", "unknown", "compile", "collective", "rendezvous", "dataloader", "cuda", "gpu"}
    assert kinds <= set(table.ROOTS), sorted(kinds - set(table.ROOTS))
    assert {category for category, _decisive in table.ROOTS.values()} <= set(table.CATEGORIES)
    assert {category for category, _words in table.BOUNDARIES.values()} <= set(table.CATEGORIES)


def test_a_decisive_root_beats_every_boundary_but_a_server_outside_the_job_and_a_weak_one_yields():
    for kind, (category, decisive) in table.ROOTS.items():
        for link, (link_category, words) in table.BOUNDARIES.items():
            got = table.decide(kind, link)
            if link == "connection-outside":
                # a request to a server outside the job: what its handler waits on (a lock, an
                # event) the job cannot change; the job waits on the network
                assert got == ("network", None), (kind, link)
            elif decisive and not (kind == "lock" and link == "lock"):
                assert got == (category, words if link_category != category else None), (kind, link)
            elif (kind, link) == ("cpu", "child"):
                # a parent joining workers that compute: their CPU (omp_threads_oversubscribed
                # on a machine with CPUs to spare, where no thread waits for one)
                assert got == ("cpu", "a child program")
            else:
                assert got == (link_category, None), (kind, link)


# capture -> the edge kinds the walk took (focus excluded), and how it ended
EDGES = [
    ("deadlock", ["lock-holder"], "lock-holder"),           # a cycle of two lock-holder edges
    ("lock_holder_slow_disk", ["lock-holder"], None),
    ("gil_held_by_regex", ["gil"], None),
    ("flock_held_outside", ["file-lock"], None),
    ("thread_join", ["sibling"], None),
    ("wait_child", ["child"], None),
    ("child_shell_slow_reader", ["child", "child"], None),
    ("mp_connection", ["peer"], None),
    ("dataloader_slow_io", ["workers"], None),
    ("gloo_hang", ["rank"], None),
    ("gpu_straggler", ["straggler"], None),
    ("fork_under_mp_lock", ["child"], "lock-holder"),       # the child's lock edge closes the cycle
]


@pytest.mark.parametrize("name,edges,end", EDGES, ids=[e[0] for e in EDGES])
def test_the_walk_takes_the_edges_of_its_kind(name, edges, end):
    report = replay(name)
    assert report["chain"][0]["edge"] is None
    assert [step["edge"] for step in report["chain"][1:]] == edges, report["chain_text"]
    assert report["verdict"]["walk_end"] == end, report["verdict"]
