"""The README's demo command, run as a new user would: it leaves the checkout clean."""
import pytest

from helpers import ROOT

pytestmark = pytest.mark.alone


def test_the_demo_writes_into_a_temporary_directory_not_the_checkout(tmp_path):
    """A new user's first command must leave `git status` clean: reports go to a printed temp dir."""
    import os
    import re
    import subprocess
    import sys
    bin_dir, tmpdir, cwd = tmp_path / "bin", tmp_path / "tmp", tmp_path / "cwd"
    for d in (bin_dir, tmpdir, cwd):
        d.mkdir()
    shim = bin_dir / "stalldiag"      # this checkout's stalldiag, whatever is installed
    shim.write_text("#!/bin/sh\nPYTHONPATH=%s exec %s -m stalldiag \"$@\"\n" % (ROOT, sys.executable))
    shim.chmod(0o755)
    env = dict(os.environ, TMPDIR=str(tmpdir), PATH="%s:%s" % (bin_dir, os.environ["PATH"]))
    proc = subprocess.run(["bash", str(ROOT / "fixtures" / "demo.sh")], cwd=str(cwd), env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "VERDICT: LOCKS" in proc.stdout
    written = re.search(r"reports written: (\S+\.md) (\S+\.json)", proc.stdout)
    assert written, proc.stdout
    for path in written.groups():
        assert path.startswith(str(tmpdir) + "/") and os.path.getsize(path) > 0
    # one deadlock, said once (the lock cycle rule must not repeat the lock-order finding)
    import json
    report = json.loads(open(written.group(2)).read())
    assert [f["kind"] for f in report["findings"]].count("deadlock") == 1, report["findings"]
    assert not list(cwd.iterdir())
    assert not (ROOT / "stalldiag-report.json").exists() and not (ROOT / "stalldiag-report.md").exists()
