"""Tenant quotas as leases (docs/quotas.md), in one place: `arithmetic` (pure: charges, grants, what a
report proves), `limits` (pure: which subscriptions are scheduled, which tenants are used up), `leasing`
(pure: a tick's grants before the polls and what it learns after them) and `store` (the SQL; functions take
the caller's session and never commit: the tick owns every transaction)."""
