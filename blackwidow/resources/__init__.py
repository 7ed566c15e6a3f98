"""Thin HTTP resources: parse the request, call one store function, shape the response."""
