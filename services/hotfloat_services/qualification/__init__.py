"""The qualification runner service: the complete-engine A/B of an admitted bundle."""
