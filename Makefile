# graphfreeze: `make demo` sets up and freezes a sample model; `make test` sets up and tests.
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEMO   := models/out/iris

.PHONY: venv demo test lint bench clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev,convert,ray,openvino]"
	touch $(STAMP)

$(DEMO)/checkpoint: models/iris_dnn.py | $(STAMP)
	@mkdir -p models/out
	$(BIN)/python models/iris_dnn.py --out $(DEMO) 2>models/out/iris.build.log || \
		(cat models/out/iris.build.log; exit 1)

demo: $(STAMP) $(DEMO)/checkpoint
	$(BIN)/freeze --ckpt $(DEMO)/model.ckpt-200 --outputs probs --force

models/out/other/frozen.pb: models/other_sources.py | $(STAMP)
	@mkdir -p models/out
	$(BIN)/python models/other_sources.py models/out/other 2>models/out/other.build.log || \
		(cat models/out/other.build.log; exit 1)

.PHONY: batch-demo
batch-demo: $(STAMP) $(DEMO)/checkpoint models/out/other/frozen.pb
	PYTHONPATH=models $(BIN)/freeze batch models/models.toml --jobs 2 --cache models/out/cache

# the base install (no extras), for tests/e2e/test_base_install.py
BASE_STAMP := .venv-base/.installed
$(BASE_STAMP): pyproject.toml
	test -x .venv-base/bin/python || $(PYTHON) -m venv .venv-base
	.venv-base/bin/python -m pip install --quiet --upgrade pip
	.venv-base/bin/python -m pip install --quiet -e .
	touch $(BASE_STAMP)

.PHONY: .venv-base
.venv-base: $(BASE_STAMP)

# tests/batch/test_report_html.py loads report.html in a headless Chromium (Debian's package)
.PHONY: chromium
chromium:
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium) \
		|| echo "warning: chromium not installed; tests/batch/test_report_html.py will skip"

test: $(STAMP) $(BASE_STAMP) chromium
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check converters cli tests models bench

bench: $(STAMP)
	$(BIN)/python bench/bench_freeze.py --markdown bench/results.md
	$(BIN)/python bench/bench_convert.py --markdown bench/results_convert.md
	$(BIN)/python bench/bench_inspect.py --markdown bench/results_inspect.md

.PHONY: zoo
zoo: $(STAMP)
	nice $(BIN)/python bench/zoo_coverage.py $(ZOO_ARGS)

clean:
	rm -rf $(VENV) .venv-base models/out bench/.cache .pytest_cache
