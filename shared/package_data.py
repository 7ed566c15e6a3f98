"""Find the files that ship beside the code (alembic's migrations, the CQL schema).

A wheel carries them inside the packages (pyproject.toml maps sql/migrations/ and cassandra/ there as
package data); a source checkout, editable install or not, has them only at their place in the repository.
"""
from importlib.resources import files
from pathlib import Path


def package_path(package: str, installed: str, checkout: str) -> Path:
    """`installed` (relative to `package`) when the package carries it, else `checkout` relative to the
    directory that holds the top-level package, i.e. the repository root of a checkout.

    Raises FileNotFoundError naming both places when neither exists."""
    shipped = Path(str(files(package))) / installed
    top_level = package.partition(".")[0]
    in_checkout = Path(str(files(top_level))).parent / checkout
    return pick_existing(shipped, in_checkout)


def pick_existing(shipped: Path, in_checkout: Path) -> Path:
    """The packaged copy wins: an installed wheel must never read files of a checkout it happens to sit in."""
    for candidate in (shipped, in_checkout):
        if candidate.exists():
            return candidate
    raise FileNotFoundError(f"neither {shipped} (installed package) nor {in_checkout} (source checkout) exists")
