"""The hint stalldiag gives when it may not read a process: what would grant access here."""
import os

import pytest


@pytest.mark.skipif(not os.path.exists("/proc/sys/kernel/yama/ptrace_scope"),
                    reason="this kernel has no Yama LSM (/proc/sys/kernel/yama/ptrace_scope)")
def test_yama_scope_is_named_in_the_hint():
    from stalldiag.permissions import how_to_get_access, yama_scope
    hint = how_to_get_access(os.geteuid() + 1)
    if yama_scope() >= 1:
        assert "kernel.yama.ptrace_scope" in hint
