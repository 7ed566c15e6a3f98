"""Revision records and the storage both hub (analysts' stats) and spawns (writer) use."""
