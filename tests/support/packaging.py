"""The project as a deployment gets it: a copy of the working tree, the wheel built from it, and fresh
virtualenvs outside the checkout that install it for real (not editable). Dependencies come from a local
wheelhouse in .cache/, filled from the package index the first time and reused after that."""
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.support.processes import ROOT

WHEELHOUSE = ROOT / ".cache" / "wheelhouse"
# Nothing from the checkout may leak into the installed programs (an empty PYTHONPATH counts as unset).
ISOLATED_ENV = {"PYTHONPATH": "", "PYTHONNOUSERSITE": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
# pip reads these itself, so a script that calls pip (bootstrap.sh) installs from the wheelhouse too.
OFFLINE_PIP_ENV = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(WHEELHOUSE)}


def run(cmd: list[str | Path], cwd: Path, env: dict | None = None, timeout: float = 900,
        check: bool = True) -> subprocess.CompletedProcess:
    """Run outside the checkout with ISOLATED_ENV; on failure the assertion carries the output."""
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, env={**os.environ, **ISOLATED_ENV, **(env or {})},
                          capture_output=True, text=True, timeout=timeout)
    if check:
        assert done.returncode == 0, f"{cmd} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def copy_source_tree(dest: Path) -> Path:
    """The files git tracks or would track, as they are in the working tree (uncommitted edits included):
    what a release archive ships. Building from a copy keeps build/ and *.egg-info out of the checkout."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True, check=True).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():            # a tracked file deleted in the working tree is not shipped
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return dest


def requirements(source: Path) -> list[str]:
    """What installing the project needs: its build backend and its runtime dependencies."""
    pyproject = tomllib.loads((source / "pyproject.toml").read_text())
    return [*pyproject["build-system"]["requires"], *pyproject["project"]["dependencies"]]


def fill_wheelhouse(reqs: list[str], cwd: Path) -> None:
    """Make WHEELHOUSE hold `reqs` and their dependencies; the index is asked only when one is missing."""
    WHEELHOUSE.mkdir(parents=True, exist_ok=True)
    download: list[str | Path] = [sys.executable, "-m", "pip", "download", "--quiet", "--dest", WHEELHOUSE,
                                  "--find-links", WHEELHOUSE, *reqs]
    if run([*download, "--no-index"], cwd, check=False).returncode != 0:
        run(download, cwd)


def build_wheel(source: Path, out: Path) -> Path:
    """`pip wheel --no-deps` of the source tree, its build requirements taken from the wheelhouse."""
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", out, source], out, OFFLINE_PIP_ENV)
    wheels = list(out.glob("blackwidow-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def make_venv(path: Path) -> Path:
    """A fresh virtualenv at `path`; returns its bin directory."""
    run([sys.executable, "-m", "venv", path], path.parent)
    return path / "bin"


def install_wheel(bin_dir: Path, wheel: Path, cwd: Path) -> None:
    """A real install of the wheel file (no -e), its dependencies from the wheelhouse."""
    run([bin_dir / "pip", "install", "--quiet", "--no-compile", wheel], cwd, OFFLINE_PIP_ENV)
