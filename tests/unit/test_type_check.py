"""The type checker passes on the model, the diagnosis and the renderers (setup.cfg [mypy] names
them; issue 41).  mypy comes with the test dependencies (requirements-test.txt): a checkout that
lacks it fails here rather than skipping the check.  It runs in this process (mypy.api)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_mypy_passes_on_the_checked_modules(monkeypatch):
    try:
        from mypy import api
    except ImportError:
        raise AssertionError("mypy is a test dependency (requirements-test.txt)") from None
    monkeypatch.chdir(ROOT)      # (setup.cfg's [mypy] names the files)
    out, err, status = api.run(["--no-error-summary"])
    assert status == 0, out[-3000:] + err[-1000:]
