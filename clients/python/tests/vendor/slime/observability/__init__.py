"""Training and rollout observability utilities."""
