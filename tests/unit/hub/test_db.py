import falcon
import sqlalchemy as sa
from falcon.testing import TestClient

from blackwidow.db import SessionMiddleware
from blackwidow.models import Tenant
from shared.errors import ValidationError
from shared.http_errors import register_error_handlers


def test_sqlite_pragmas(hub_maker):
    with hub_maker() as session:
        assert session.execute(sa.text("PRAGMA journal_mode")).scalar() == "wal"
        assert session.execute(sa.text("PRAGMA foreign_keys")).scalar() == 1
        assert session.execute(sa.text("PRAGMA busy_timeout")).scalar() == 5000


class Writer:
    def on_post(self, req, resp):
        req.context.session.add(Tenant(id=req.params["id"], name=req.params["id"], used=0))
        req.context.session.flush()
        if req.params.get("fail"):
            raise ValidationError("refused after writing", field="fail")
        resp.media = {"ok": True}


def test_session_middleware_commits_on_success_and_rolls_back_on_error(hub_maker):
    app = falcon.App(middleware=[SessionMiddleware(hub_maker)])
    register_error_handlers(app)
    app.add_route("/w", Writer())
    client = TestClient(app)
    assert client.simulate_post("/w", params={"id": "kept"}).status_code == 200
    assert client.simulate_post("/w", params={"id": "dropped", "fail": "1"}).status_code == 422
    with hub_maker() as session:
        assert set(session.scalars(sa.select(Tenant.id))) == {"kept"}
    assert hub_maker.kw["bind"].pool.checkedout() == 0      # every session was closed
