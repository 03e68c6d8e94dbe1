"""Bench target for stalldiag's own cost: a tree of N processes, ~10 threads each.

The root forks N-1 children (before starting any thread), then every process
starts 9 extra threads that loop on time.sleep(0.5).  When every process is
up the root prints "READY <pid>" on stdout.  Children die with the root.

usage: idle_tree.py N
"""
import ctypes
import os
import signal
import sys
import threading
import time

EXTRA_THREADS = 9


def die_with_parent():
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def napper():
    while True:
        time.sleep(0.5)


def start_threads():
    for i in range(EXTRA_THREADS):
        threading.Thread(target=napper, name="idle-%d" % i, daemon=True).start()


def main():
    n = int(sys.argv[1])
    die_with_parent()
    root = os.getpid()
    r, w = os.pipe()
    for _ in range(n - 1):
        if os.fork() == 0:
            os.close(r)
            die_with_parent()
            if os.getppid() != root:
                os._exit(0)
            start_threads()
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
    start_threads()
    print("READY %d %d" % (root, got + 1), flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
