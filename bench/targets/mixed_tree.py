"""Bench target for issue 15: a tree of N processes, T threads each, of four kinds.

The root forks N-1 children (before starting any thread); every process then
starts T-1 extra threads cycling through the kinds a training node has:
idle (sleep), waiting (a lock nobody releases), computing (1 ms of busy loop
a second) and reading (pread of a small file four times a second).  Each
process uses ~0.3% of a core, so 160 of them leave a 2-core machine room: a
stalled node's processes are mostly blocked, and a tree that saturates the
machine would measure the scheduler, not the observer.  When every process is up
the root prints "READY <pid> <count>".  Children die with the root.

usage: mixed_tree.py N [THREADS]
"""
import ctypes
import os
import signal
import sys
import tempfile
import threading
import time


def die_with_parent():
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def idle():
    while True:
        time.sleep(0.5)


def waiting(lock=threading.Lock()):
    lock.acquire()   # the first one holds it for ever; the others wait in futex
    lock.acquire()


def computing():
    while True:
        end = time.monotonic() + 0.001
        while time.monotonic() < end:
            pass
        time.sleep(1.0)


def reading(path):
    fd = os.open(path, os.O_RDONLY)
    while True:
        os.pread(fd, 64, 0)
        time.sleep(0.25)


def start_threads(count, path):
    kinds = [idle, waiting, computing, lambda: reading(path)]
    for i in range(count - 1):
        kind = kinds[i % len(kinds)]
        threading.Thread(target=kind, name="%s-%d" % (getattr(kind, "__name__", "reading"), i),
                         daemon=True).start()


def main():
    n = int(sys.argv[1])
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    die_with_parent()
    fd, path = tempfile.mkstemp(prefix="mixed-tree-")
    os.write(fd, b"x" * 4096)
    os.close(fd)
    root = os.getpid()
    r, w = os.pipe()
    for _ in range(n - 1):
        if os.fork() == 0:
            os.close(r)
            die_with_parent()
            if os.getppid() != root:
                os._exit(0)
            start_threads(threads, path)
            os.write(w, b"+")
            os.close(w)
            while True:
                time.sleep(3600)
    os.close(w)
    got = 0
    while got < n - 1:
        chunk = os.read(r, n)
        if not chunk:
            break
        got += len(chunk)
    start_threads(threads, path)
    os.unlink(path)   # every reader has it open
    print("READY %d %d" % (root, got + 1), flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
