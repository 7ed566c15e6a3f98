"""Spawn: a stateless crawler node that runs what the hub assigns it."""
