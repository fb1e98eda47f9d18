# Two commands for a newcomer: `make up` (the local stack, end to end) and `make test`.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STACK ?= dev

# The requirement sets, by role (README, "Dependencies"), all pinned by constraints.txt; the
# interpreter is scripts/find-python's (the newest of Python 3.13 and 3.12, else python3).
RUNTIME := requirements.txt requirements-gcp.txt
EMULATOR := requirements-emulator.txt
DEV := requirements-dev.txt
VENV_SCRIPTS := scripts/make-venv scripts/find-python
RUN_STAMP := $(VENV)/.installed-runtime-emulator
DEV_STAMP := $(VENV)/.installed-dev
POLICY_STAMP := policy/.venv/.installed

.PHONY: venv dev-venv policy pulumi provider provider-schema sdk up down lint test unit smoke smoke-ranges smoke-lowest smoke-newest dist release bench preview-md clean

# runtime + emulator: what `make up` needs
venv: $(RUN_STAMP)

# + the development tools: what `make test` needs
dev-venv: $(DEV_STAMP)

# The CrossGuard policy pack's own virtualenv (policy/requirements.txt: it needs protobuf 5).
policy: $(POLICY_STAMP)

$(RUN_STAMP): $(RUNTIME) $(EMULATOR) constraints.txt $(VENV_SCRIPTS)
	scripts/make-venv $(VENV) constraints.txt $(RUNTIME) $(EMULATOR)
	@touch $@

$(DEV_STAMP): $(RUN_STAMP) $(DEV)
	scripts/make-venv $(VENV) constraints.txt $(RUNTIME) $(EMULATOR) $(DEV)
	@touch $@

$(POLICY_STAMP): policy/requirements.txt policy/constraints.txt $(VENV_SCRIPTS)
	scripts/make-venv policy/.venv policy/constraints.txt policy/requirements.txt
	@touch $@

# The Pulumi CLI and the Python, YAML, Node.js and Go language hosts, built once from Go modules
# into a cache.
pulumi:
	scripts/install-pulumi >/dev/null
	scripts/install-language-hosts >/dev/null

# The provider plugin (components/plugin) run from this checkout, where the engine finds it:
# .tools/bin/pulumi-resource-gpu-training (on PATH in the e2e tests; docs/plugin.md).
provider: venv pulumi
	ln -sfn ../../scripts/pulumi-resource-gpu-training .tools/bin/pulumi-resource-gpu-training

# The plugin's schema, regenerated from the Vertex AI v1 types (tests/plugin/test_schema.py
# fails when the committed one is stale).
provider-schema: venv
	$(PY) scripts/gen_provider_schema.py

# The plugin's SDKs, sdk/{python,nodejs,go}, from its schema by Pulumi's own generators
# (tests/plugin/test_sdk.py fails when they are stale).
sdk: provider-schema
	scripts/generate-sdk

# The local stack: emulator in the background, `pulumi up` on the `local` stack.
up: venv
	scripts/local-stack up

down: venv
	scripts/local-stack down

lint: dev-venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy components emulator tests bench examples/trainer scripts/local_outputs.py scripts/smoke_checks.py scripts/release.py scripts/wheelhouse.py __main__.py
	$(VENV)/bin/mypy policy/__main__.py

# pytest-xdist workers for `make test` and `make unit` (TEST_WORKERS=0: all in one process).
# The units of work are tests/conftest.py's (FileUnits, which `--dist loadfile` selects there):
# a test file, run in one worker in its own order; an end-to-end test on its own, except in the
# e2e files with module fixtures. More workers than cores: the end-to-end tests mostly wait on
# the engine's subprocesses. --no-loadscope-reorder keeps the collection order, which puts the
# end-to-end units (the longest) first.
TEST_WORKERS ?= 4
PYTEST_WORKERS = -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The full suite on the project's interpreter, and the installed package: on the lowest
# supported Python at this repo's pins, and with its extras at both ends of its ranges
# (scripts/smoke-runtime). What pytest needs (lint first, the engine build, the policy pack's
# virtualenv) runs side by side once the project's virtualenv is there (each target's output
# printed whole when it ends); the three smoke runs (fresh virtualenvs, mostly downloads and
# unpacking, each from its own copy of the source) run beside pytest, their output printed
# after it. Either failing fails the target.
SMOKE_LOG = build/smoke.log
test: dev-venv
	$(MAKE) --no-print-directory -j 3 --output-sync=target lint pulumi policy
	@mkdir -p build
	@$(MAKE) --no-print-directory -j 3 --output-sync=target smoke smoke-lowest smoke-newest \
		>$(SMOKE_LOG) 2>&1 & smoke=$$!; \
	$(PY) -m pytest $(PYTEST_WORKERS); tests=$$?; \
	wait $$smoke; smoked=$$?; cat $(SMOKE_LOG); \
	if [ $$smoked -ne 0 ]; then echo "make test: the smoke runs failed (above)" >&2; fi; \
	[ $$tests -eq 0 ] && [ $$smoked -eq 0 ]

unit: dev-venv
	$(PY) -m pytest $(PYTEST_WORKERS) tests --ignore=tests/e2e

smoke: venv
	scripts/smoke-runtime pinned

smoke-ranges: smoke-lowest smoke-newest

smoke-lowest: venv
	scripts/smoke-runtime lowest

smoke-newest: venv
	scripts/smoke-runtime newest

# A wheel of the package: gpu_training (components/, with its catalog data) and
# gpu_training_emulator (emulator/); requirements as ranges, extras [gcp] and [emulator].
dist: venv
	$(PY) -m pip wheel --quiet --no-deps -w dist .
	@ls dist/*.whl

# Every release artifact of components/VERSION in dist/ (docs/release.md): the plugin archive,
# the wheels, the Node.js SDK tarball, the Go SDK's proxy tree, the policy pack, SHA256SUMS.
release: venv
	$(PY) scripts/release.py

bench: dev-venv pulumi
	$(PY) bench/validate.py
	$(PY) bench/convert_import.py
	$(PY) bench/provider.py
	$(PY) bench/emulator.py
	$(PY) bench/emulator_list.py
	$(PY) bench/tuning_cancel.py
	$(PY) bench/pyenv.py
	$(PY) bench/preview.py
	$(PY) bench/scale.py
	$(PY) bench/install.py
	$(PY) bench/plugin_env.py

# A pull-request comment for STACK (default dev): `pulumi preview --json` rendered as markdown.
preview-md: venv pulumi
	@mkdir -p .local/pulumi-state .local/pulumi-home
	PATH="$(CURDIR)/.tools/bin:$$PATH" PULUMI_ENABLE_STREAMING_JSON_PREVIEW=true \
	PULUMI_BACKEND_URL="$${PULUMI_BACKEND_URL:-file://$(CURDIR)/.local/pulumi-state}" \
	PULUMI_HOME="$(CURDIR)/.local/pulumi-home" PULUMI_SKIP_UPDATE_CHECK=true \
	PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true \
	PULUMI_CONFIG_PASSPHRASE="$${PULUMI_CONFIG_PASSPHRASE:-local-stack}" \
	pulumi preview --stack $(STACK) --non-interactive --json > .local/preview-$(STACK).json || true
	$(PY) -m components.review .local/preview-$(STACK).json

clean:
	rm -rf $(VENV) policy/.venv .tools .mypy_cache .ruff_cache .pytest_cache .hypothesis build dist *.egg-info
