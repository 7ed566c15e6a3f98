import pytest

from spawn import cli


def test_serve_without_the_node_secret_fails_naming_the_variable(monkeypatch, capsys):
    monkeypatch.delenv("BW_NODE_SECRET", raising=False)
    monkeypatch.setattr(cli.os, "execvpe", lambda *a: pytest.fail("must not start gunicorn"))
    assert cli.main(["serve", "--hub", "http://127.0.0.1:8700"]) == 2
    assert "BW_NODE_SECRET" in capsys.readouterr().err


def test_serve_runs_one_gunicorn_worker_with_the_flags_as_environment(monkeypatch):
    monkeypatch.setenv("BW_NODE_SECRET", "x")
    seen = {}
    monkeypatch.setattr(cli.os, "execvpe", lambda path, cmd, env: seen.update(cmd=cmd, env=env))
    cli.main(["serve", "--hub", "http://hub:8700", "--bind", "127.0.0.1:8799"])
    assert seen["cmd"][-3:] == ["--config", "python:spawn.gunicorn_conf", "spawn.app:get_app()"]
    assert seen["env"]["BW_HUB_URL"] == "http://hub:8700" and seen["env"]["BW_BIND"] == "127.0.0.1:8799"
    assert seen["env"]["BW_ADVERTISE_URL"] == "http://127.0.0.1:8799"
    from spawn import gunicorn_conf
    assert gunicorn_conf.workers == 1 and gunicorn_conf.worker_class == "gthread" and not gunicorn_conf.preload_app
