# Teal: kubebuilder-style entry points. Every target installs what it needs.
SHELL := /usr/bin/env bash
.DEFAULT_GOAL := help

NPM_STAMP := node_modules/.package-lock.json

.PHONY: help
help: ## Show the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  make %-10s %s\n", $$1, $$2}'

$(NPM_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

.PHONY: deps
deps: $(NPM_STAMP) ## Install npm packages (Node 24 comes with them)

.PHONY: binaries
binaries: ## Build or reuse the cached control-plane binaries (Kubernetes, etcd, kwok)
	bash test/cluster/build-binaries.sh >/dev/null

.PHONY: manifests
manifests: deps ## Generate the CRD (config/crd, charts/teal/crds) and the chart values schema from zod
	npm run -s manifests

.PHONY: lint
lint: deps ## Lint, format check and typecheck
	npm run -s lint
	npm run -s typecheck

.PHONY: test
test: deps binaries lint ## Run the whole test suite on a local control plane
	npm test

.PHONY: bench
bench: deps binaries ## Measure promote-to-switch latency and operator memory (bench/)
	npm run -s bench

.PHONY: dev
dev: deps binaries ## Run a local control plane with the App CRD installed (Ctrl-C stops it)
	npm run -s cluster -- up
