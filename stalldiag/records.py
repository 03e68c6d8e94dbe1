"""One decorator for stalldiag's typed records: capture sections, the pipeline's steps, the report.

A frozen dataclass costs about 0.7 ms to define on CPython 3.11 (six generated methods, each
compiled on its own) and stalldiag defines some 60 of them at every start.  Outside the tests a
record declared frozen is defined without the frozen guard (its __setattr__ and __delattr__) but
keeps what the code relies on: value equality, and a hash by value.  The tests set
STALLDIAG_CHECKS=1 (tests/conftest.py), and there every record declared frozen is frozen, so code
that changes a record after it was built fails in the tests, not in a user's inspection.
"""
import os
from dataclasses import dataclass

CHECKS = os.environ.get("STALLDIAG_CHECKS") == "1"


def typed_record(cls=None, *, frozen=False):
    """@typed_record or @typed_record(frozen=True): a dataclass; one declared frozen is frozen under checks,
    and hashed by value either way."""
    def wrap(c):
        return dataclass(c, frozen=frozen and CHECKS, unsafe_hash=frozen and not CHECKS)
    return wrap if cls is None else wrap(cls)
