"""Authoring aids: the `hotfloat new` template, the Cacheon bundle importer and the bundle format's JSON Schema."""
