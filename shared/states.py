"""Subscription states, one enum for hub and spawns. StrEnum: members equal the strings on the wire and in
the database, so rows and JSON need no conversion."""
from enum import StrEnum


class SubState(StrEnum):
    PENDING = "pending"              # the hub has not placed it yet (no live node, or no ack)
    ASSIGNED = "assigned"            # a node acknowledged it and has not started fetching
    RUNNING = "running"
    WAITING = "waiting"              # on its node, waiting for a quota lease or the upstream budget
    LIMIT_REACHED = "limit_reached"  # its own quota, or its tenant's, is used up
    FAILED = "failed"                # its node gave up on it (a permanent error from the wiki)
    DELETED = "deleted"              # its page was deleted on the wiki; its node re-checks it rarely
    DISABLED = "disabled"            # turned off through the admin API


# What a node may report about a subscription it runs; anything else in a report is ignored.
NODE_REPORTED = frozenset({SubState.ASSIGNED, SubState.RUNNING, SubState.WAITING, SubState.FAILED,
                           SubState.LIMIT_REACHED, SubState.DELETED})
# Still able to receive revisions.
ACTIVE = frozenset({SubState.ASSIGNED, SubState.RUNNING, SubState.WAITING})
