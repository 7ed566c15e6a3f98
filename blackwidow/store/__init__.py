"""The hub's configuration store: plain functions taking a session first. They never commit."""
from blackwidow.store.dashboard import DashboardData, dashboard_data
from blackwidow.store.nodes import NodeLoad, get_node, list_nodes, register_node
from blackwidow.store.subscriptions import (create_pages, create_subscription, create_subscriptions,
                                            delete_subscription, get_subscription, list_subscriptions,
                                            update_subscription)
from blackwidow.store.tenants import (TenantUsage, create_tenant, delete_tenant, get_tenant, list_tenants,
                                      tenant_usage, update_tenant)

__all__ = [
    "DashboardData", "dashboard_data",
    "NodeLoad", "get_node", "list_nodes", "register_node",
    "create_pages", "create_subscription", "create_subscriptions", "delete_subscription", "get_subscription",
    "list_subscriptions", "update_subscription",
    "TenantUsage", "create_tenant", "delete_tenant", "get_tenant", "list_tenants", "tenant_usage",
    "update_tenant",
]
