# graphfreeze: `make demo` sets up and freezes a sample model; `make samples` builds the models the
# README's other examples use; `make test` sets up and tests.
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEMO   := models/out/iris

.PHONY: venv demo samples test lint bench clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev,convert,ray,openvino,text,keras-hub,llm,explorer]"
	touch $(STAMP)

$(DEMO)/checkpoint: models/iris_dnn.py | $(STAMP)
	@mkdir -p models/out
	$(BIN)/python models/iris_dnn.py --out $(DEMO) 2>models/out/iris.build.log || \
		(cat models/out/iris.build.log; exit 1)

# the demo writes into $(DEMO)/demo/, so the README's first command, typed in $(DEMO), is new
demo: $(STAMP) $(DEMO)/checkpoint
	cd $(DEMO) && $(CURDIR)/$(BIN)/freeze --ckpt model.ckpt-200 --outputs probs \
		--target android,tflite,onnx -o demo/ --force
	@echo
	@echo "The sample checkpoint is in $(DEMO); the demo's artifacts in $(DEMO)/demo/. Your turn:"
	@echo "  source $(VENV)/bin/activate     # puts freeze on your PATH (or run $(BIN)/freeze)"
	@echo "  cd $(DEMO) && freeze --ckpt model.ckpt-200 --outputs probs"
	@echo "README.md goes on from there; \`make samples\` builds the models its other examples use."

samples: $(STAMP) $(DEMO)/checkpoint
	$(BIN)/python docs/examples.py --samples models/out

models/out/other/frozen.pb: models/other_sources.py | $(STAMP)
	@mkdir -p models/out
	$(BIN)/python models/other_sources.py models/out/other 2>models/out/other.build.log || \
		(cat models/out/other.build.log; exit 1)

.PHONY: batch-demo
batch-demo: $(STAMP) $(DEMO)/checkpoint models/out/other/frozen.pb
	PYTHONPATH=models $(BIN)/freeze batch models/models.toml --jobs 2 --cache models/out/cache

# the wheel and the sdist, as released: `python -m build` makes the sdist, then the wheel from the
# sdist (so the sdist holds what the wheel needs); tests/e2e/test_wheel_contents.py checks both.
# An old graphfreeze.egg-info/SOURCES.txt would add the files it lists to the sdist: it goes first.
PACKAGED := pyproject.toml setup.py MANIFEST.in README.md $(shell find converters cli -type f ! -name '*.py[cod]')
DIST := dist/.built
$(DIST): $(PACKAGED) | $(STAMP)
	rm -rf dist graphfreeze.egg-info
	$(BIN)/python -m build --quiet --outdir dist . >/dev/null
	touch $(DIST)

.PHONY: dist
dist: $(DIST)

# the base install (no extras) from dist/'s wheel, for tests/e2e/test_base_install.py; pip keeps
# an installed graphfreeze of the same version, so the old one goes first
BASE_STAMP := .venv-base/.installed
$(BASE_STAMP): $(DIST)
	test -x .venv-base/bin/python || $(PYTHON) -m venv .venv-base
	.venv-base/bin/python -m pip install --quiet --upgrade pip
	.venv-base/bin/python -m pip uninstall --quiet --yes graphfreeze
	.venv-base/bin/python -m pip install --quiet dist/graphfreeze-*.whl
	touch $(BASE_STAMP)

.PHONY: .venv-base
.venv-base: $(BASE_STAMP)

# the install tests/e2e/test_wheel*.py run: action.yml's own install step, run as the runner runs
# it (out of the checkout, bash -eo pipefail) with extras convert,openvino,ray: pip builds the
# wheel from the checkout and installs it (test_wheel_contents: the same files as dist/'s wheel)
WHEEL_STAMP := .venv-wheel/.installed
ACTION_STEP := import sys, yaml; steps = yaml.safe_load(open(sys.argv[1]))["runs"]["steps"]; \
	print(next(s["run"] for s in steps if s.get("name") == sys.argv[2]))
$(WHEEL_STAMP): $(DIST) action.yml
	test -x .venv-wheel/bin/python || $(PYTHON) -m venv .venv-wheel
	.venv-wheel/bin/python -m pip install --quiet --upgrade pip
	rm -rf build
	$(BIN)/python -c '$(ACTION_STEP)' action.yml "Install graphfreeze" >.venv-wheel/install.sh
	cd "$${TMPDIR:-/tmp}" && PATH="$(CURDIR)/.venv-wheel/bin:$$PATH" GITHUB_ACTION_PATH="$(CURDIR)" \
		EXTRAS=convert,openvino,ray,llm bash --noprofile --norc -eo pipefail "$(CURDIR)/.venv-wheel/install.sh" \
		>"$(CURDIR)/.venv-wheel/install.log" 2>&1 || (cat "$(CURDIR)/.venv-wheel/install.log"; exit 1)
	touch $(WHEEL_STAMP)

.PHONY: .venv-wheel
.venv-wheel: $(WHEEL_STAMP)

# tests/batch/test_report_html.py loads report.html in a headless Chromium (Debian's package), and
# the web targets verify in it
.PHONY: chromium
chromium:
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium) \
		|| echo "warning: chromium not installed; tests/batch/test_report_html.py will skip"

# the web targets' browser runtimes (onnxruntime-web, @litertjs/core), pinned in
# web/package-lock.json, into web/node_modules (graphfreeze.formats.web reads them there)
WEB_STAMP := web/node_modules/.installed
$(WEB_STAMP): web/package.json web/package-lock.json
	cd web && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $(WEB_STAMP)

.PHONY: web
web: $(WEB_STAMP) chromium

test: $(STAMP) $(BASE_STAMP) $(WHEEL_STAMP) chromium $(WEB_STAMP)
	$(BIN)/python -m pytest
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir build/site

# the edit loop's tier: the tests that build no sample model and run nothing end to end (the
# `slow` marker is set by tests/conftest.py from the fixtures a test uses)
.PHONY: test-fast
test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not slow"

lint: $(STAMP)
	$(BIN)/ruff check converters cli tests models bench docs setup.py

bench: $(STAMP)
	$(BIN)/python bench/bench_freeze.py --markdown bench/results.md
	$(BIN)/python bench/bench_convert.py --markdown bench/results_convert.md
	$(BIN)/python bench/bench_inspect.py --markdown bench/results_inspect.md

.PHONY: zoo
zoo: $(STAMP)
	nice $(BIN)/python bench/zoo_coverage.py $(ZOO_ARGS)

clean:
	rm -rf $(VENV) .venv-base .venv-wheel dist build models/out bench/.cache .pytest_cache web/node_modules
