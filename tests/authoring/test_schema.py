"""`hotfloat bundle schema`: generated from the validating models, so its keys, required fields and enums describe
exactly what the loader accepts (checked against every example, and against the loader's own refusals)."""

import json
import subprocess
import sys
import tomllib

import pytest

from hotfloat.authoring.schema import bundle_schema
from hotfloat.bundle.manifest import ARCHITECTURES, Manifest, OpEntry, OpMetadata
from hotfloat.slots import DTYPES, SLOTS

from ..conftest import EXAMPLES

MANIFESTS = sorted(EXAMPLES.glob("*/manifest.toml"))


def test_schema_keys_and_required_fields_are_the_models():
    manifest, metadata = bundle_schema("manifest"), bundle_schema("metadata")
    assert set(manifest["properties"]) == set(Manifest.model_fields)
    assert set(manifest["required"]) == {n for n, f in Manifest.model_fields.items() if f.is_required()}
    op = manifest["$defs"]["OpEntry"]
    assert set(op["properties"]) == set(OpEntry.model_fields) and op["additionalProperties"] is False
    assert set(metadata["properties"]) == set(OpMetadata.model_fields) and metadata["additionalProperties"] is False
    assert op["properties"]["slot"]["enum"] == sorted(SLOTS)
    assert op["properties"]["dtypes"]["items"]["enum"] == list(DTYPES)
    assert op["properties"]["architectures"]["items"]["enum"] == list(ARCHITECTURES)


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.parent.name)
def test_every_example_fits_the_schema(path):
    schema = bundle_schema("manifest")
    doc = tomllib.loads(path.read_text())
    assert set(doc) <= set(schema["properties"]) and set(schema["required"]) <= set(doc)
    entry = schema["$defs"]["OpEntry"]["properties"]
    for op in doc["ops"]:
        assert set(op) <= set(entry)
        assert op["slot"] in entry["slot"]["enum"]
        assert set(op.get("dtypes", [])) <= set(entry["dtypes"]["items"]["enum"])
        assert set(op.get("architectures", [])) <= set(entry["architectures"]["items"]["enum"])
    for meta in path.parent.glob("metadata/*.json"):
        assert set(json.loads(meta.read_text())) <= set(bundle_schema("metadata")["properties"])


def test_cli_prints_both_schemas():
    p = subprocess.run(
        [sys.executable, "-m", "hotfloat.cli", "bundle", "schema"], capture_output=True, text=True, timeout=120
    )
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and set(doc["properties"]) == {"manifest.toml", "metadata/*.json"}
    assert doc["properties"]["manifest.toml"]["properties"]["abi_version"]["const"] == "hotfloat-op-abi-v1"
