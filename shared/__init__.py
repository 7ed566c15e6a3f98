"""Code both the hub and the spawns use: config, errors, wire shapes, hashing, logging."""
