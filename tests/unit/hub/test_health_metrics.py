from falcon.testing import TestClient

from blackwidow.app import create_app
from blackwidow.db import make_sessionmaker
from tests.fixtures.hub import ADMIN, LOCAL_WIKI, api_client, hub_config


def test_metrics_say_the_database_is_down_when_it_does_not_answer():
    # nothing listens on port 1: the connection is refused at once
    url = "postgresql+psycopg2://bw:secret-pw@127.0.0.1:1/none"
    maker = make_sessionmaker(url)
    api = api_client(hub_config(url), maker)
    metrics = api.simulate_get("/metrics")
    assert metrics.status_code == 200 and "bw_hub_database_up 0.0" in metrics.text
    assert "secret-pw" not in metrics.text
    maker.kw["bind"].dispose()


def test_metrics_only_on_the_metrics_listener(api, sqlite_url, hub_maker):
    assert api.simulate_get("/metrics", port=8700).status_code == 404             # the API port
    assert api.simulate_get("/metrics", port=8700, headers={"Authorization": ""}).status_code == 404
    off = TestClient(create_app(hub_config(sqlite_url), sessionmaker=hub_maker), headers=ADMIN)
    assert off.simulate_get("/metrics").status_code == 404                        # no BW_METRICS_PORT


def test_metrics(api, tenant):
    api.simulate_post("/v1/subscriptions", json={"tenant_id": tenant["id"], "wiki": LOCAL_WIKI, "title": "A"})
    resp = api.simulate_get("/metrics")
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/plain")
    text = resp.text
    assert "bw_hub_database_up 1.0" in text
    assert 'bw_hub_subscriptions{state="pending"} 1.0' in text
    assert "bw_hub_tenants 1.0" in text
    assert 'bw_hub_http_requests_total{method="POST",route="/v1/subscriptions",status="201"}' in text
    assert "test-admin-token" not in text and "test-node-secret" not in text
