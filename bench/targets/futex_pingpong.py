"""Bench target (b): two threads ping-pong through threading.Event (futex-heavy).

Thread "ping" sets ev_pong's partner and waits; "pong" answers.  One round
trip = ping -> pong -> ping.  Counts round trips.

usage: futex_pingpong.py PROGRESS_FILE
"""
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _progress import die_with_parent, start_reporter  # noqa: E402


def main():
    die_with_parent()
    state = [0]
    to_pong = threading.Event()
    to_ping = threading.Event()

    def pong():
        wait, clear, answer = to_pong.wait, to_pong.clear, to_ping.set
        while True:
            wait()
            clear()
            answer()

    threading.Thread(target=pong, name="pong", daemon=True).start()
    start_reporter(sys.argv[1], state)
    wait, clear, serve = to_ping.wait, to_ping.clear, to_pong.set
    n = 0
    while True:
        serve()
        wait()
        clear()
        n += 1
        state[0] = n


if __name__ == "__main__":
    main()
