"""The change log of subscriptions: which rows the admin API created, changed or deleted, in commit order.

The scheduler keeps its snapshot of every subscription between ticks (a million rows took 8 s to read
each tick) and re-reads only the ids noted here since its last read. The tick's own writes are not
noted: it applies them to its snapshot itself. Whoever else writes `subscriptions` notes the ids in the
same transaction (`note`).

Each noting transaction takes the next number from `change_heads`, whose row stays locked until it
commits: numbers are handed out in commit order, so a reader that sees head H can read every change up
to H and none is committed later with a smaller number.
"""
from typing import Iterable

import sqlalchemy as sa
from sqlalchemy.orm import Session

from blackwidow.models import ChangeHead, SubscriptionChange
from blackwidow.store.upserts import upsert

HEAD = "subscriptions"
_CHUNK = 500


def note(session: Session, ids: Iterable[str]) -> None:
    """Record that the subscriptions `ids` were created, changed or deleted in this transaction."""
    ids = sorted(set(ids))
    if not ids:
        return
    stmt = upsert(session, ChangeHead.__table__).values(name=HEAD, seq=1)
    seq = session.execute(stmt.on_conflict_do_update(index_elements=["name"], set_={"seq": ChangeHead.seq + 1})
                          .returning(ChangeHead.seq)).scalar_one()
    session.execute(sa.insert(SubscriptionChange), [{"seq": seq, "subscription_id": i} for i in ids])


def head(session: Session) -> int:
    """The newest committed change number (0: none yet)."""
    return session.scalar(sa.select(ChangeHead.seq).where(ChangeHead.name == HEAD)) or 0


def since(session: Session, after: int, upto: int) -> set[str]:
    """Ids noted with numbers in (after, upto]."""
    return set(session.scalars(sa.select(SubscriptionChange.subscription_id)
                               .where(SubscriptionChange.seq > after, SubscriptionChange.seq <= upto)))


def prune(session: Session, upto: int) -> None:
    """Forget changes numbered up to `upto` (read by the scheduler; a new leader reads everything)."""
    session.execute(sa.delete(SubscriptionChange).where(SubscriptionChange.seq <= upto))
