"""What stalldiag knows about syscalls, Python frames and ML frameworks, as tables.

Each table is plain data so that a reader can audit it and a test can
exercise each row; the diagnosis code only looks rows up.
"""
