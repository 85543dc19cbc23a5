"""The deviceless compiler service: identity re-check, scan, and AOT builds with no GPU and no network."""
