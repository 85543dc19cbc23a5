# Sourced from the repo root by the device scripts: the device's Python gets pydantic and its deps from the carried
# `.whl/` (when it lacks them; see docs/benchmarks.md "Reproduce") and imports this tree's packages. PYTHON picks the
# interpreter (default python3; a venv's python for dry runs on a CPU box).
if ! ${PYTHON:-python3} -c 'import pydantic' 2>/dev/null && ls .whl/*.whl >/dev/null 2>&1; then
  ${PYTHON:-python3} -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .whl/*.whl
fi
export PYTHONPATH="$PWD/libs/hotfloat:$PWD/services:/tmp/site"
