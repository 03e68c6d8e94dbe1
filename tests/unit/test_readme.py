"""The README's fresh-machine commands are the ones CI runs."""
from helpers import ROOT


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    readme = (ROOT / "README.md").read_text()
    assert ci in readme


def test_readme_demo_command_names_a_bundled_script():
    readme = (ROOT / "README.md").read_text()
    assert "python3 -m pip install . && bash fixtures/demo.sh" in readme
    assert (ROOT / "fixtures" / "demo.sh").exists()
