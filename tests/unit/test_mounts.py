"""Which mount a file is on (stalldiag/mounts.py), read from this process's own /proc.  The wakers
of waits on real workloads, FUSE mounts among them, are in tests/live/test_wakers_probe.py.
"""
import os


def test_file_wait_mountinfo_resolution_on_tmpfs(tmp_path):
    """mount_of on an ordinary file: by the fd's mnt_id and by the longest mount prefix."""
    from stalldiag import mounts
    path = "/dev/shm/stalldiag-mounts-%d" % os.getpid()
    with open(path, "w") as f:
        by_fd = mounts.mount_of(os.getpid(), path, f.fileno())
        by_path = mounts.mount_of(os.getpid(), path)
    os.unlink(path)
    assert by_fd == by_path and by_fd["mountpoint"] == "/dev/shm" and by_fd["fstype"] == "tmpfs"
    st = os.stat("/dev/shm")
    assert by_fd["dev"] == "%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev))
