"""mypy over the code that runs (blackwidow, spawn, shared), configured in pyproject.toml, checked on
every run so that the annotations stay true."""
import subprocess
import sys

from tests.support.processes import ROOT


def test_mypy_is_clean():
    done = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--no-error-summary"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert done.returncode == 0 and not errors, done.stdout[-8000:] + done.stderr[-2000:]
