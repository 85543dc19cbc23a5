"""The admission worker service: the verify protocol on the worker's own device, inside its sandbox."""
