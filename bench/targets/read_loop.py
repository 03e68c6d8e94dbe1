"""Bench target (a): a tight loop of os.pread(fd, 64, 0) on a small file.

usage: read_loop.py PROGRESS_FILE
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _progress import die_with_parent, start_reporter  # noqa: E402


def main():
    die_with_parent()
    state = [0]
    with tempfile.NamedTemporaryFile(prefix="stalldiag-bench-", delete=False) as f:
        f.write(b"x" * 4096)
        data_path = f.name
    fd = os.open(data_path, os.O_RDONLY)
    os.unlink(data_path)
    start_reporter(sys.argv[1], state)
    pread = os.pread
    n = 0
    while True:
        pread(fd, 64, 0)
        n += 1
        state[0] = n


if __name__ == "__main__":
    main()
