"""Read-side helpers for analysts: the CQL cookbook."""
