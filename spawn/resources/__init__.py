"""Thin HTTP resources of the node API: parse, call the Node, set the response."""
