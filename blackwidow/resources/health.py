"""GET /health (no auth): 200 only when the deployment can make progress (blackwidow/health.py decides),
else 503 with a JSON body saying why. What the ALB's target group checks."""
import logging
from datetime import datetime, timezone
from typing import Callable

import falcon

from blackwidow.db import ping
from blackwidow.health import hub_health
from blackwidow.store.scheduler_state import acting_scheduler

logger = logging.getLogger(__name__)


class HealthResource:
    auth_exempt = True

    def __init__(self, maker, *, poll_interval_s: float,
                 clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc)):
        self._maker = maker
        self._poll_interval_s = poll_interval_s
        self._clock = clock

    def on_get(self, req, resp) -> None:
        database_ok, scheduler = True, None
        try:
            with self._maker() as session:
                ping(session)
                scheduler = acting_scheduler(session)
        except Exception:          # any failure to answer is "unreachable"; the details go to the log only
            logger.warning("health.database_unavailable", exc_info=True)
            database_ok = False
        health = hub_health(database_ok, scheduler, self._clock(), self._poll_interval_s)
        if not health.healthy:
            logger.warning("health.unavailable", extra={"reason": health.body["reason"]})
            resp.status = falcon.HTTP_503
        resp.media = health.body
