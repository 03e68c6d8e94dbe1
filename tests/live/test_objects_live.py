"""The objects behind the waits, read from real processes of every CPython 3.8-3.13 (issue 33):
a barrier short of parties, a semaphore whose permits leaked, a bounded queue nobody drains, an
RLock whose owner exited.  The verdict says the object's state, not the possible stories."""
import pytest

from helpers import VERSIONS, WORKLOADS, inspect_json, interpreter

pytestmark = pytest.mark.live

# workload, its arguments, words the summary must hold
CASES = {
    "barrier": ("barrier_party_missing.py", ["threads"], ["Barrier", "expects 4 parties and 3 arrived"]),
    "semaphore": ("semaphore_leak.py", [], ["Semaphore", "its value is 0 of 2"]),
    "queue": ("queue_consumer_died.py", [], ["Queue", "it is full (4 of maxsize 4)"]),
    "rlock": ("rlock_owner_exited.py", [], ["self._model_lock, an RLock", "is no longer alive"]),
}


@pytest.mark.parametrize("minor", VERSIONS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_object_behind_the_wait_is_read_and_said(launch, case, minor):
    python = interpreter(minor)
    if python is None:
        pytest.skip("CPython %s is absent on this machine" % minor)
    script, args, words = CASES[case]
    w = launch(script, settle=1.0, argv=[python, "-u", str(WORKLOADS / script)] + args)
    report = inspect_json(w.pid, "--children", duration=2)
    verdict = report["verdict"]
    assert verdict["category"] == "locks", verdict["summary"]
    assert verdict["mechanism"] == "stuck-object", verdict["summary"]
    for word in words:
        assert word in verdict["summary"], verdict["summary"]
    objects = report["capture"]["objects"]
    assert objects and objects["threads"], report["capture"].get("limitations")
    # facts, never raw values: no repr of a local's value is copied
    assert all("repr" not in item for item in objects["threads"])


def test_a_lock_held_in_a_module_global_is_said_not_read(launch, tmp_path):
    """py-spy reads locals only: a lock taken as a module global is 'not read', with why (its
    holder, another thread, sleeps inside it: no closed mechanism decides the verdict without it)."""
    script = tmp_path / "global_lock.py"
    script.write_text(
        "import signal, sys, threading, time\n"
        "sys.path.insert(0, %r)\n"
        "from _ready import ready\n"
        "signal.alarm(120)\n"
        "LOCK = threading.Lock()\n"
        "def holder():\n"
        "    with LOCK:\n"
        "        time.sleep(600)\n"
        "threading.Thread(target=holder, name='holder', daemon=True).start()\n"
        "time.sleep(0.2)\n"
        "ready()\n"
        "with LOCK:\n"
        "    pass\n" % str(WORKLOADS))
    w = launch(str(script), settle=1.0)
    report = inspect_json(w.pid, duration=2)
    items = report["capture"]["objects"]["threads"]
    assert items and "not_read" in items[0]["fact"] and "not a local" in items[0]["fact"]["not_read"], items
    assert report["verdict"]["category"] == "locks", report["verdict"]["summary"]


def test_a_self_deadlock_stands_without_its_object_and_the_target_is_not_dumped(launch, tmp_path):
    """A thread that takes a lock it holds is a closed mechanism: the objects of its wait cannot
    change the verdict, so they are not read (no py-spy dump of the target), and the report says so."""
    script = tmp_path / "self_lock.py"
    script.write_text(
        "import signal, sys, threading\n"
        "sys.path.insert(0, %r)\n"
        "from _ready import ready\n"
        "signal.alarm(120)\n"
        "LOCK = threading.Lock()\n"
        "LOCK.acquire()\n"
        "ready()\n"
        "with LOCK:\n"
        "    pass\n" % str(WORKLOADS))
    w = launch(str(script), settle=1.0)
    report = inspect_json(w.pid, duration=2)
    assert report["capture"]["objects"] is None
    assert any(line.startswith("objects: not read") for line in report["limitations"]), report["limitations"]
    assert report["verdict"]["category"] == "locks" and report["verdict"]["confidence"] == "high", report["verdict"]
