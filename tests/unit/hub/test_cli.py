"""`blackwidow admin …` turns arguments into the right REST calls (a recording client stands in for HTTP;
tests/integration/test_hub_serve.py runs the same commands against a real server)."""
import io
import json

import pytest

from tests.unit.hub.test_migrations import HEAD
from blackwidow import cli


class Recorder:
    def __init__(self):
        self.calls = []

    def call(self, method, path, *, body=None, params=None):
        self.calls.append((method, path, body, params))
        return {"ok": True}

    def pages(self, path, params):
        self.calls.append(("PAGES", path, None, params))
        yield {"id": 1}


def run(argv):
    args = cli._admin_defaults(cli.build_parser().parse_args(["admin", *argv]))
    client = Recorder()
    answer = cli._admin_call(args, client)
    return client.calls, answer


@pytest.mark.parametrize("argv, call", [
    (["tenants", "create", "--name", "acme"], ("POST", "/v1/tenants", {"name": "acme"}, None)),
    (["tenants", "create", "--name", "acme", "--quota", "5"],
     ("POST", "/v1/tenants", {"name": "acme", "quota": 5}, None)),
    (["tenants", "patch", "T", "--quota", "none"], ("PATCH", "/v1/tenants/T", {"quota": None}, None)),
    (["tenants", "delete", "T"], ("DELETE", "/v1/tenants/T", None, None)),
    (["tenants", "list", "--limit", "2"], ("GET", "/v1/tenants", None, {"limit": 2})),
    (["subs", "add", "--tenant", "T", "--wiki", "W", "--title", "X"],
     ("POST", "/v1/subscriptions", {"tenant_id": "T", "wiki": "W", "title": "X"}, None)),
    (["subs", "add", "--tenant", "T", "--wiki", "W", "--title", "X", "--content", "--quota", "3"],
     ("POST", "/v1/subscriptions",
      {"tenant_id": "T", "wiki": "W", "title": "X", "quota": 3, "content": True}, None)),
    (["subs", "patch", "S", "--disable"], ("PATCH", "/v1/subscriptions/S", {"enabled": False}, None)),
    (["subs", "patch", "S", "--enable", "--no-content"],
     ("PATCH", "/v1/subscriptions/S", {"enabled": True, "content": False}, None)),
    (["subs", "list", "--tenant", "T", "--state", "running", "--cursor", "C"],
     ("GET", "/v1/subscriptions", None, {"tenant_id": "T", "state": "running", "cursor": "C"})),
    (["subs", "list", "--all"], ("PAGES", "/v1/subscriptions", None, {"limit": 1000})),
    (["subs", "get", "S"], ("GET", "/v1/subscriptions/S", None, None)),
    (["subs", "delete", "S"], ("DELETE", "/v1/subscriptions/S", None, None)),
    (["nodes", "list"], ("GET", "/v1/nodes", None, None)),
    (["nodes", "get", "N"], ("GET", "/v1/nodes/N", None, None)),
    (["sets", "add", "--tenant", "T", "--wiki", "W", "U1", "U2"],
     ("POST", "/v1/subscriptions", {"kind": "wiki", "tenant_id": "T", "wiki": "W", "dumps": ["U1", "U2"]}, None)),
    (["sets", "add", "--tenant", "T", "--wiki", "W", "--dbname", "chwiki", "--parallel", "1", "--content", "U"],
     ("POST", "/v1/subscriptions", {"kind": "wiki", "tenant_id": "T", "wiki": "W", "dumps": ["U"],
                                    "dbname": "chwiki", "content": True, "parallel": 1}, None)),
    (["sets", "add", "--tenant", "T", "--wiki", "W", "--namespace", "0", "--namespace", "4", "--dumped-at",
      "2026-01-01T00:00:00Z", "U"],
     ("POST", "/v1/subscriptions", {"kind": "namespace", "tenant_id": "T", "wiki": "W", "dumps": ["U"],
                                    "namespaces": [0, 4], "dumped_at": "2026-01-01T00:00:00Z"}, None)),
    (["sets", "add", "--tenant", "T", "--wiki", "W", "--category", "Islands", "--depth", "2"],
     ("POST", "/v1/subscriptions", {"kind": "category", "tenant_id": "T", "wiki": "W", "category": "Islands",
                                    "depth": 2}, None)),
    (["sets", "add", "--tenant", "T", "--wiki", "W", "--category", "Islands", "U"],
     ("POST", "/v1/subscriptions", {"kind": "category", "tenant_id": "T", "wiki": "W", "category": "Islands",
                                    "dumps": ["U"]}, None)),
    (["sets", "list"], ("GET", "/v1/sets", None, None)),
    (["sets", "list", "--tenant", "T"], ("GET", "/v1/sets", None, {"tenant_id": "T"})),
    (["sets", "get", "S"], ("GET", "/v1/sets/S", None, None)),
    (["sets", "stop", "S"], ("PATCH", "/v1/sets/S", {"enabled": False}, None)),
    (["sets", "resume", "S"], ("PATCH", "/v1/sets/S", {"enabled": True}, None)),
    (["sets", "delete", "S"], ("DELETE", "/v1/sets/S", None, None)),
    (["sets", "add", "--tenant", "T", "--wiki", "W", "--census-interval", "0", "U"],
     ("POST", "/v1/subscriptions", {"kind": "wiki", "tenant_id": "T", "wiki": "W", "dumps": ["U"],
                                    "census_interval_s": 0}, None)),
    (["sets", "census-interval", "S", "3600"], ("PATCH", "/v1/sets/S", {"census_interval_s": 3600}, None)),
    (["sets", "census-interval", "S", "default"], ("PATCH", "/v1/sets/S", {"census_interval_s": None}, None)),
])
def test_admin_commands_map_to_rest_calls(argv, call):
    calls, _ = run(argv)
    assert calls == [call]


def test_bulk_reads_titles_from_stdin(monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("Main Page\n\n# a comment\nFoo_bar\n"))
    calls, _ = run(["subs", "bulk", "--tenant", "T", "--wiki", "W", "-"])
    items = [{"title": "Main Page"}, {"title": "Foo_bar"}]
    body = {"tenant_id": "T", "wiki": "W", "items": items}
    assert calls == [("POST", "/v1/subscriptions/bulk", body, None)]


def test_pages_reads_titles_from_a_file(tmp_path):
    path = tmp_path / "titles.txt"
    path.write_text("Main Page\n# a comment\n\n  apple_pie \n", encoding="utf-8")
    calls, _ = run(["subs", "pages", "--tenant", "T", "--wiki", "W", "--quota", "5", str(path)])
    body = {"kind": "pages", "tenant_id": "T", "wiki": "W", "titles": ["Main Page", "apple_pie"], "quota": 5}
    assert calls == [("POST", "/v1/subscriptions", body, None)]
    calls, _ = run(["subs", "pages", "--tenant", "T", "--wiki", "W", "--case-sensitive", "--content", str(path)])
    assert calls[0][2]["case"] == "case-sensitive" and calls[0][2]["content"] is True


@pytest.mark.parametrize("refused, code", [([], 0), ([{"index": 1, "reason": "duplicate"}], 3)])
def test_pages_exits_3_when_the_hub_refused_some_titles(monkeypatch, capsys, refused, code):
    answer = {"kind": "pages", "created": [{"index": 0, "title": "A", "id": "S"}], "refused": refused}

    class Hub:
        def __init__(self, *args, **kwargs):
            pass

        def call(self, method, path, *, body=None, params=None):
            return answer

    monkeypatch.setenv("BW_ADMIN_TOKEN", "t")
    monkeypatch.setattr("blackwidow.admin_client.AdminClient", Hub)
    monkeypatch.setattr("sys.stdin", io.StringIO("A\nA\n"))
    assert cli.main(["admin", "subs", "pages", "--tenant", "T", "--wiki", "W", "-"]) == code
    assert json.loads(capsys.readouterr().out) == answer


def test_an_unreadable_titles_file_exits_2_before_any_call(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("BW_ADMIN_TOKEN", "t")
    missing = str(tmp_path / "none.txt")
    assert cli.main(["admin", "--hub", "http://127.0.0.1:1", "subs", "pages", "--tenant", "T", "--wiki", "W",
                     missing]) == 2
    assert "none.txt" in capsys.readouterr().err


def test_bad_quota_is_a_usage_error(capsys):
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["admin", "tenants", "create", "--name", "a", "--quota", "lots"])


def test_admin_without_token_exits_2(monkeypatch, capsys):
    monkeypatch.delenv("BW_ADMIN_TOKEN", raising=False)
    assert cli.main(["admin", "nodes", "list"]) == 2
    assert "BW_ADMIN_TOKEN" in capsys.readouterr().err


def test_unreachable_hub_prints_a_json_error(monkeypatch, capsys):
    monkeypatch.setenv("BW_ADMIN_TOKEN", "t")
    assert cli.main(["admin", "--hub", "http://127.0.0.1:1", "nodes", "list"]) == 1
    assert json.loads(capsys.readouterr().err)["error"]["code"] == "unreachable"


def test_serve_refuses_to_start_without_config_or_database(monkeypatch, capsys):
    monkeypatch.setenv("BW_NODE_SECRET", "b")
    monkeypatch.delenv("BW_ADMIN_TOKEN", raising=False)
    assert cli.main(["serve"]) == 2
    assert "BW_ADMIN_TOKEN" in capsys.readouterr().err
    monkeypatch.setenv("BW_ADMIN_TOKEN", "a")
    monkeypatch.setenv("BW_DATABASE_URL", "postgresql+psycopg2://u:secret-pw@127.0.0.1:1/none")
    assert cli.main(["serve"]) == 1
    err = capsys.readouterr().err
    assert "cannot migrate" in err and "secret-pw" not in err


def test_migrate_command(tmp_path, capsys):
    assert cli.main(["migrate", "--database-url", f"sqlite:///{tmp_path}/x.db"]) == 0
    assert json.loads(capsys.readouterr().out) == {"revision": HEAD}
