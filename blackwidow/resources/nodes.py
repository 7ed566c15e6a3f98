"""/v1/nodes: spawns register with the node secret (POST); operators list them with the admin token."""
import falcon

from blackwidow import liveness, representations, store, validation
from blackwidow.store import nodes as nodes_store
from shared.config import HubConfig
from shared.json_body import read_json
from shared.wire import Registration, RegistrationAck


class NodesResource:
    node_auth_methods = ("POST",)      # spawn registration; everything else takes the admin token

    def __init__(self, config: HubConfig):
        self._config = config

    def on_post(self, req, resp) -> None:
        body = read_json(req, self._config.max_body_bytes)
        validation.parse(body, validation.NODE_REGISTER)
        registration = Registration.from_dict(body)
        node, created = store.register_node(req.context.session, registration.url,
                                            flapping=liveness.Flapping(self._config.node_flap_restarts,
                                                                       self._config.node_flap_window_s,
                                                                       self._config.node_quarantine_s))
        refused = nodes_store.refusal(node)
        if refused is not None:
            # answered, not raised: the eviction it records must be committed
            resp.status = refused.status
            resp.media = refused.to_dict()
            resp.set_header("Retry-After", str(refused.retry_after_s))
            return
        resp.status = falcon.HTTP_201 if created else falcon.HTTP_200
        resp.media = RegistrationAck(id=node.id, poll_interval_s=self._config.poll_interval_s,
                                     detach_after_s=self._config.detach_after_s,
                                     orphan_after_s=self._config.orphan_after_s).to_dict()

    def on_get(self, req, resp) -> None:
        validation.parse_query(req.params, ())
        loads = store.list_nodes(req.context.session)
        consensus = representations.clock_consensus(loads)
        resp.media = {"items": [representations.node(n, self._config.max_clock_skew_s, consensus) for n in loads]}

    def on_get_item(self, req, resp, node_id) -> None:
        node = store.get_node(req.context.session, str(node_id))
        consensus = representations.clock_consensus(store.list_nodes(req.context.session))
        resp.media = representations.node(node, self._config.max_clock_skew_s, consensus)
