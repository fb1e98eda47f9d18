# Two commands for a newcomer: `make up` (the local stack, end to end) and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
STACK ?= dev

.PHONY: venv pulumi up down lint test unit bench preview-md clean

venv: $(STAMP)

$(STAMP): requirements.txt constraints.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt -c constraints.txt
	@touch $(STAMP)

# The Pulumi CLI and Python language host, built once from Go modules into a cache.
pulumi:
	scripts/install-pulumi >/dev/null

# The local stack: emulator in the background, `pulumi up` on the `local` stack.
up: venv
	scripts/local-stack up

down: venv
	scripts/local-stack down

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy components emulator tests bench examples/trainer scripts/local_outputs.py __main__.py
	$(VENV)/bin/mypy policy/__main__.py

test: lint pulumi
	$(PY) -m pytest

unit: venv
	$(PY) -m pytest tests --ignore=tests/e2e

bench: venv pulumi
	$(PY) bench/validate.py
	$(PY) bench/provider.py
	$(PY) bench/emulator.py
	$(PY) bench/emulator_list.py
	$(PY) bench/pyenv.py
	$(PY) bench/preview.py
	$(PY) bench/scale.py

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
	rm -rf $(VENV) .tools .mypy_cache .ruff_cache .pytest_cache .hypothesis
