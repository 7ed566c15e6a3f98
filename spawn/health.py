"""Pure: whether this spawn is part of the cluster, for GET /health (load balancers, autoscaling).

Healthy means registered AND hearing from the hub. Anything else is a 503 naming the state, and the
load figure is then null, not 0: a node outside the cluster holds no work because it may not, not
because there is none, and a 0 would invite autoscaling to remove a healthy instance.
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class Attachment:
    registered: bool                   # the hub accepted this node's last registration
    attached: bool                     # ... and has called it within the detach timeout since
    detached: bool                     # it dropped its jobs after hub silence and registers again
    failed_status: int | None = None   # HTTP status of the last failed registration, while unregistered
    unreachable: bool = False          # the last registration attempt did not reach the hub


@dataclass(frozen=True)
class SpawnHealth:
    healthy: bool
    state: str                         # attached | registering | refused | detached
    reason: str | None
    load: int | None


def spawn_health(att: Attachment, load: int, detach_after_s: float) -> SpawnHealth:
    if att.registered and att.attached:
        return SpawnHealth(True, "attached", None, load)
    if att.failed_status is not None and 400 <= att.failed_status < 500:   # 5xx: the hub is down, not refusing
        return SpawnHealth(False, "refused", f"the hub refused registration (HTTP {att.failed_status})", None)
    tail = ("; the hub is unreachable" if att.unreachable else
            f"; the hub answered HTTP {att.failed_status}" if att.failed_status is not None else "")
    if att.detached or (att.registered and not att.attached):
        return SpawnHealth(False, "detached", f"no call from the hub for over {detach_after_s:g} s: jobs dropped, "
                                              f"registering again{tail}", None)
    return SpawnHealth(False, "registering", f"registration not accepted yet{tail}", None)
