"""`make bench` is not part of the test run (it takes minutes and measures): at least every script it
runs must import, so a refactoring elsewhere cannot break one unnoticed."""
import importlib

import pytest

from bench.run import SCRIPTS


@pytest.mark.parametrize("name", [*SCRIPTS, "spawn_farm", "bench_wiki"])
def test_bench_script_imports(name):
    module = importlib.import_module(f"bench.{name}")
    assert callable(getattr(module, "main", None)), f"bench.{name} has no main()"
