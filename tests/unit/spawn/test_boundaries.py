"""Import boundaries of the spawn package, checked on the source with ast."""
import ast
import pathlib

import pytest

SPAWN = pathlib.Path(__file__).resolve().parents[3] / "spawn"

ALLOWED = {
    "requests": {"mediawiki.py", "hub_client.py", "wiki_session.py", "dump_stream.py"},
    "urllib3": {"wiki_session.py"},
    "falcon": {"app.py", "resources/health.py"},
    "cassandra": set(),             # the store comes from shared.revisions.factory
    "sqlalchemy": set(),            # only the hub touches SQL
    "prometheus_client": {"metrics.py", "resources/health.py"},
}


def imports(path: pathlib.Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("path", sorted(SPAWN.rglob("*.py")), ids=lambda p: str(p.relative_to(SPAWN)))
def test_module_imports_stay_inside_their_boundary(path):
    rel = str(path.relative_to(SPAWN))
    for package, allowed in ALLOWED.items():
        if package in imports(path):
            assert rel in allowed, f"spawn/{rel} must not import {package}"
