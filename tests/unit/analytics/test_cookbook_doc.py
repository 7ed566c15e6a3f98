"""docs/analysts.md and blackwidow/analytics/cookbook.py stay one thing: statements parse, name real
tables and columns, and every Python step the page shows is the module's own code."""
import inspect
import re
from collections import namedtuple
from datetime import datetime, timezone

import pytest

from blackwidow.analytics import cookbook
from blackwidow.analytics.cookbook import (
    DOC_PATH, anon_share, largest_changes, load_statements, merge_shards, months_overlapping, top_editors,
    year_months)
from shared.revisions.cql_schema import SCHEMA_PATH, split_statements

Row = namedtuple("Row", "rev_ts rev_id user_text anon size_delta")
QUESTIONS = ("history_month", "history_between", "edits_per_day", "editors_month", "user_month", "day_shard",
             "latest_revisions", "tag_month")


def schema_columns() -> dict[str, set[str]]:
    tables = {}
    for statement in split_statements(SCHEMA_PATH.read_text(encoding="utf-8")):
        found = re.match(r"CREATE TABLE IF NOT EXISTS \w+\.(\w+)\s*\((.*)\)", statement, re.S)
        if found:
            tables[found.group(1)] = {line.split()[0] for line in found.group(2).split(",\n")
                                      if line.strip() and not line.strip().startswith("PRIMARY")}
    return tables


def test_statements_are_named_parameterised_and_read_one_known_table():
    statements = load_statements()
    tables = schema_columns()
    assert len(statements) >= 12 and set(QUESTIONS) <= set(statements)
    for name, cql in statements.items():
        assert cql.startswith("SELECT") and "?" not in cql and "ALLOW FILTERING" not in cql.upper(), name
        assert re.search(r"WHERE wiki = :wiki AND ", cql), name
        table = re.search(r"FROM (\w+)", cql).group(1)
        assert table in tables, name
        for column in re.findall(r"\b([a-z_]+) (?:=|>=|<|IN) :", cql):
            assert column in tables[table], (name, column)


def test_a_statement_defined_twice_is_refused(tmp_path):
    doc = tmp_path / "doc.md"
    block = "```cql\n-- name: same\nSELECT 1 FROM t WHERE wiki = :wiki;\n```\n"
    doc.write_text(block + "text\n" + block, encoding="utf-8")
    with pytest.raises(ValueError, match="defined twice"):
        load_statements(doc)


def test_python_steps_in_the_document_are_the_modules_code():
    text = DOC_PATH.read_text(encoding="utf-8")
    steps = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if b.startswith("def ")]
    source = inspect.getsource(cookbook)
    assert len(steps) >= 6
    for step in steps:
        assert step in source, step.splitlines()[0]


def at(day, hour=0):
    return datetime(2024, 5, day, hour, tzinfo=timezone.utc)


def test_client_side_steps():
    a, b, c = (Row(at(1), 1, "Ann", False, 10), Row(at(2), 7, "Bob", True, -300),
               Row(at(2), 9, "Ann", False, None))
    assert merge_shards([[c, a], [b]]) == [c, b, a]
    assert top_editors([a, b, c, Row(at(3), 11, "Bea", False, 5), Row(at(3), 12, None, False, 0)]) == \
        [("Ann", 2), ("Bea", 1), ("Bob", 1)]
    d = Row(at(3), 11, "Bea", True, 300)
    assert largest_changes([a, b, c, d], 2) == [b, d]          # equal sizes: the older first
    assert anon_share([a, b, c]) == {"anonymous": 1, "registered": 2, "anonymous_share": 1 / 3}
    assert anon_share([]) == {"anonymous": 0, "registered": 0, "anonymous_share": 0.0}
    assert months_overlapping([202406, 202405, 202312, 202401], datetime(2023, 12, 15, tzinfo=timezone.utc),
                              at(20)) == [202405, 202401, 202312]
    assert year_months(2024)[0] == 202412 and year_months(2024)[-1] == 202401
