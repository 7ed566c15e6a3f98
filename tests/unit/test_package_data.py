"""Where the migrations and the CQL schema are found: a package's own copy (an installed wheel) before the
checkout's, and the packaging configuration maps exactly the directories the code looks for."""
import configparser
import tomllib
from pathlib import Path

import pytest

from blackwidow import migrate
from shared.package_data import package_path, pick_existing
from shared.revisions import cql_schema

ROOT = Path(__file__).resolve().parents[2]


def test_a_checkout_finds_the_repository_files():
    assert migrate.migrations_dir() == ROOT / "sql" / "migrations"
    assert cql_schema.SCHEMA_PATH == ROOT / "cassandra" / "schema.cql"
    assert (migrate.migrations_dir() / "env.py").is_file()


@pytest.mark.parametrize("shipped, in_checkout, expected", [
    (True, True, "shipped"),          # a wheel installed inside some checkout still reads its own copy
    (True, False, "shipped"),
    (False, True, "in_checkout"),
])
def test_pick_existing(tmp_path, shipped, in_checkout, expected):
    paths = {"shipped": tmp_path / "pkg" / "schema.cql", "in_checkout": tmp_path / "cassandra" / "schema.cql"}
    for name, present in (("shipped", shipped), ("in_checkout", in_checkout)):
        if present:
            paths[name].parent.mkdir()
            paths[name].write_text("--")
    assert pick_existing(paths["shipped"], paths["in_checkout"]) == paths[expected]


def test_neither_place_is_an_error_naming_both(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothere.*installed package.*gone.*source checkout"):
        pick_existing(tmp_path / "nothere", tmp_path / "gone")


def test_an_installed_package_reads_its_own_copy(tmp_path, monkeypatch):
    site = tmp_path / "site"
    (site / "fakepkg" / "migrations").mkdir(parents=True)
    (site / "fakepkg" / "__init__.py").write_text("")
    (site / "sql" / "migrations").mkdir(parents=True)      # a stray checkout layout beside it is ignored
    monkeypatch.syspath_prepend(str(site))
    assert package_path("fakepkg", "migrations", "sql/migrations") == site / "fakepkg" / "migrations"


def test_packaging_maps_the_directories_the_code_reads():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapped = setuptools["package-dir"]
    assert mapped["blackwidow.migrations"] == migrate.CHECKOUT_DIR
    assert migrate.INSTALLED_DIR == "migrations"
    installed_dir, _, schema_name = cql_schema.INSTALLED_SCHEMA.partition("/")
    assert mapped[f"shared.revisions.{installed_dir}"] == str(Path(cql_schema.CHECKOUT_SCHEMA).parent)
    assert setuptools["package-data"][f"shared.revisions.{installed_dir}"] == [schema_name]
    assert "script.py.mako" in setuptools["package-data"]["blackwidow.migrations"]

    setup_py = (ROOT / "setup.py").read_text()
    for package in (*mapped, "blackwidow.migrations.versions"):
        assert f'"{package}"' in setup_py


def test_alembic_ini_points_at_the_same_directory():
    ini = configparser.ConfigParser()
    ini.read(ROOT / "alembic.ini")
    location = ini.get("alembic", "script_location", raw=True).replace("%(here)s", str(ROOT))
    assert Path(location) == migrate.migrations_dir()
