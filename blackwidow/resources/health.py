"""GET /health (no auth): 200 when the configuration store answers SELECT 1, else 503."""
import logging

import falcon

from blackwidow.db import ping

logger = logging.getLogger(__name__)


class HealthResource:
    auth_exempt = True

    def __init__(self, maker):
        self._maker = maker

    def on_get(self, req, resp) -> None:
        try:
            with self._maker() as session:
                ping(session)
        except Exception:          # any failure to answer is "unavailable"; the details go to the log only
            logger.warning("health.database_unavailable", exc_info=True)
            resp.status = falcon.HTTP_503
            resp.media = {"status": "unavailable", "database": "unreachable"}
            return
        resp.media = {"status": "ok", "database": "ok"}
