"""/openapi.json is a valid OpenAPI 3.0 document that matches the routes and the real answers."""
import falcon.inspect
import pytest
from openapi_schema_validator import OAS30Validator
from openapi_spec_validator import validate

from blackwidow.openapi import document
from tests.fixtures.hub import LOCAL_WIKI, NODE


@pytest.fixture(scope="module")
def spec():
    doc = document()
    validate(doc)
    return doc


def _check(spec, schema_name: str, value) -> None:
    schema = {**spec["components"]["schemas"][schema_name], "components": spec["components"]}
    OAS30Validator(schema).validate(value)


def test_document_is_served_and_valid(api, spec):
    assert api.simulate_get("/openapi.json").json == spec


def test_paths_and_methods_match_the_routes(api, spec):
    routes = {}
    for route in falcon.inspect.inspect_routes(api.app):
        methods = {m.method.lower() for m in route.methods if not m.internal}
        path = route.path.replace(":uuid}", "}")
        routes[path] = methods
    documented = {path: set(ops) - {"parameters"} for path, ops in spec["paths"].items()}
    assert documented == routes


def test_request_schemas_refuse_unknown_fields(spec):
    for name in ("TenantCreate", "TenantPatch", "SubscriptionCreate", "SubscriptionPatch", "SubscriptionBulk",
                 "SubscriptionPages", "NodeRegistration"):
        assert spec["components"]["schemas"][name]["additionalProperties"] is False


def test_real_answers_match_their_schemas(api, spec, tenant):
    _check(spec, "Tenant", tenant)
    _check(spec, "TenantPage", api.simulate_get("/v1/tenants").json)
    sub = api.simulate_post("/v1/subscriptions", json={"tenant_id": tenant["id"], "wiki": LOCAL_WIKI,
                                                       "title": "A"}).json
    _check(spec, "Subscription", sub)
    _check(spec, "SubscriptionPage", api.simulate_get("/v1/subscriptions").json)
    bulk = api.simulate_post("/v1/subscriptions/bulk", json={"tenant_id": tenant["id"], "wiki": LOCAL_WIKI,
                                                             "items": [{"title": "B"}, {"title": "A"}]}).json
    _check(spec, "Error", bulk)
    _check(spec, "RegistrationAck",
           api.simulate_post("/v1/nodes", json={"url": "http://127.0.0.1:8701"}, headers=NODE).json)
    _check(spec, "NodeList", api.simulate_get("/v1/nodes").json)
    _check(spec, "Health", api.simulate_get("/health").json)
    _check(spec, "Error", api.simulate_post("/v1/tenants", json={"nope": 1}).json)


def test_documented_request_bodies_are_accepted(api, spec, tenant):
    """A body built from the schema's own required fields is what the API takes."""
    create = spec["components"]["schemas"]["SubscriptionCreate"]
    assert set(create["required"]) == {"tenant_id", "wiki", "title"}
    body = {"tenant_id": tenant["id"], "wiki": LOCAL_WIKI, "title": "Z"}
    _check(spec, "SubscriptionCreate", body)
    assert api.simulate_post("/v1/subscriptions", json=body).status_code == 201


def test_pages_answers_match_their_schemas(api, spec, tenant):
    body = {"kind": "pages", "tenant_id": tenant["id"], "wiki": LOCAL_WIKI, "titles": ["A", "b"]}
    _check(spec, "SubscriptionPages", body)
    created = api.simulate_post("/v1/subscriptions", json=body)
    assert created.status_code == 201
    _check(spec, "PagesResult", created.json)
    partial = api.simulate_post("/v1/subscriptions", json={**body, "titles": ["a", "C", "C", "x|y"]})
    assert partial.status_code == 207 and len(partial.json["refused"]) == 3
    _check(spec, "PagesResult", partial.json)
    assert set(spec["paths"]["/v1/subscriptions"]["post"]["responses"]) >= {"201", "207", "422"}
