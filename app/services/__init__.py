"""Use-case services."""
