"""The code style setup.cfg declares (flake8: pyflakes' errors and pycodestyle), checked on every run
so that it stays the style the code has."""
import subprocess
import sys

from tests.support.processes import ROOT


def test_flake8_is_clean():
    done = subprocess.run([sys.executable, "-m", "flake8", "blackwidow", "spawn", "shared", "bench", "tools", "tests"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
