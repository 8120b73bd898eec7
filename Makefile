# Teal: kubebuilder-style entry points. Every target installs what it needs.
SHELL := /usr/bin/env bash
.DEFAULT_GOAL := help

NPM_STAMP := node_modules/.package-lock.json

.PHONY: help
help: ## Show the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  make %-12s %s\n", $$1, $$2}'

$(NPM_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

.PHONY: deps
deps: $(NPM_STAMP) ## Install npm packages (Node 24 comes with them)

.PHONY: binaries
binaries: ## Build or reuse the cached control-plane binaries (Kubernetes, etcd, kwok), and Prometheus from Debian's package
	bash test/cluster/build-binaries.sh >/dev/null
	bash test/cluster/install-prometheus.sh >/dev/null

.PHONY: build-tools
build-tools: ## Debian packages of real image builds and of the traffic tests' kube-proxy (nftables) (root, when missing), and BuildKit and kaniko built from Go modules, cached
	bash test/cluster/install-build-packages.sh
	bash test/cluster/build-toolchain.sh >/dev/null

.PHONY: gitea
gitea: ## Gitea, the real git hosting server of the pull-request preview tests, built from Go modules (cgo, for SQLite) and cached
	bash test/cluster/build-gitea.sh >/dev/null

.PHONY: browser
browser: ## Debian's chromium-headless-shell, the browser of the dashboard's tests (root, when missing)
	bash test/cluster/install-browser.sh

.PHONY: bundle
bundle: deps ## The operator as one file, as the image runs it: dist/teal.js, and the dashboard's files in dist/ui (scripts/bundle.ts)
	npm run -s bundle

# make image IMAGE_PUSH=127.0.0.1:5000/teal:dev: push there (BuildKit pushes plain HTTP to 127.0.0.1 only) rather than write the archive.
IMAGE_PUSH ?=

.PHONY: image
image: deps build-tools ## The operator image from the Dockerfile as it is, by the project's rootless BuildKit FROM a node:24-slim stand-in (root): dist/image/teal.oci.tar, or pushed to IMAGE_PUSH (docs/getting-started.md)
	node_modules/.bin/node scripts/image.ts $(if $(IMAGE_PUSH),--push $(IMAGE_PUSH))

.PHONY: ui
ui: deps ## The dashboard's files only, into dist/ui (scripts/bundle-ui.ts), which the operator serves under /
	npm run -s bundle:ui

.PHONY: cli
cli: cli-bundle ## The kubectl plugin: the bundle bin/kubectl-teal runs, and single executables (linux amd64, arm64) in .tar.gz archives with checksums and a krew manifest, in dist/cli/standalone (docs/cli.md)
	npm run -s standalone:cli $(if $(RELEASE_URL),-- --release-url $(RELEASE_URL))

.PHONY: cli-bundle
cli-bundle: deps ## The kubectl plugin as bin/kubectl-teal runs it: dist/cli/kubectl-teal.js, bundled and split per command
	npm run -s bundle:cli

.PHONY: manifests
manifests: deps ## Generate the CRD (config/crd, charts/teal/crds) and the chart values schema from zod
	npm run -s manifests

.PHONY: lint
lint: deps ## Lint, format check and typecheck
	npm run -s lint
	npm run -s typecheck

.PHONY: test
test: deps binaries build-tools browser gitea lint ## Run the whole test suite on a local control plane (real image builds, a real browser and a real Gitea included)
	npm test

.PHONY: test-loaded
test-loaded: ## The whole suite while stress-ng keeps every core busy, as on a loaded CI runner
	bash scripts/test-loaded.sh

# make bench APPS=100,1000: the sizes to run (1000 by default; 10000 by hand). docs/benchmark.md.
APPS ?=

.PHONY: bench
bench: deps binaries bundle ## Teal (as the image runs it: a fresh dist/teal.js) and Argo Rollouts side by side (bench/): converge, memory, API requests, cold start, promote latency
	bash test/cluster/build-argo.sh >/dev/null
	npm run -s bench -- $(if $(APPS),--apps $(APPS))

# make bench-cli RUNS=50: runs of each command (30 by default).
RUNS ?=

.PHONY: bench-cli
bench-cli: deps binaries cli ## kubectl teal (bundle and sources) beside kubectl get, on one control plane: median and p90 of N runs, with the load (bench/cli.ts)
	node_modules/.bin/node bench/cli.ts $(if $(RUNS),--runs $(RUNS))

# make bench-dashboard DASHBOARD_BENCH_ARGS='--apps 10000 --period 300': bench/dashboard.ts's flags.
DASHBOARD_BENCH_ARGS ?=

.PHONY: bench-dashboard
bench-dashboard: deps binaries browser ## The dashboard's costs (issue #25): API requests per open tab, change-to-paint latency, 10,000 Apps (snapshot, first screen, rows, memory per stream) (bench/dashboard.ts)
	node_modules/.bin/node bench/dashboard.ts $(DASHBOARD_BENCH_ARGS)

# make bench-traffic TRAFFIC_BENCH_ARGS='--switches 3 --scenarios promote,abort --columns teal': bench/traffic.ts's flags.
TRAFFIC_BENCH_ARGS ?=

.PHONY: bench-traffic
bench-traffic: deps binaries build-tools bundle ## What a client sees through each blue/green switch (issue #26): failed and wrong-revision requests through kube-proxy and a pod-aware LB model, Teal beside Argo Rollouts (bench/traffic.ts; root)
	bash test/cluster/build-argo.sh >/dev/null
	node_modules/.bin/node bench/traffic.ts $(TRAFFIC_BENCH_ARGS)

# make bench-app-events APP_EVENTS_BENCH_ARGS='--apps 100 --events 20000': bench/app-events.ts's flags.
APP_EVENTS_BENCH_ARGS ?=

.PHONY: bench-app-events
bench-app-events: deps binaries ## The memory of the operator's cache of Events about Apps (the App page's Events): heap per Event after GC, RSS, on a local control plane (bench/app-events.ts)
	node_modules/.bin/node bench/app-events.ts $(APP_EVENTS_BENCH_ARGS)

# make dev REAL_BUILDS=1: the weather app built for real (BuildKit rootless, a local registry; root only).
REAL_BUILDS ?=
# make dev PREVIEWS=1: build Gitea first if it is not (about 20 minutes cold) for pull-request previews;
# PREVIEWS=0: never. Unset: previews when Gitea is built (make gitea), else one line says how.
PREVIEWS ?=

.PHONY: dev
dev: deps binaries ui cli-bundle ## Local control plane + operator (and its dashboard) + the weather-app example as a local git repo, and a local Gitea with pull-request previews when it is built (Ctrl-C stops it); REAL_BUILDS=1 builds for real, PREVIEWS=1 builds Gitea
	npm run -s cluster -- up $(if $(filter-out 0 no false,$(REAL_BUILDS)),--real-builds) $(if $(PREVIEWS),$(if $(filter 0 no false,$(PREVIEWS)),--no-previews,--previews))

.PHONY: dev-pr
dev-pr: deps ## With make dev running its Gitea: push a branch with a small change, open a pull request of it there, and say how to watch its preview come up
	npm run -s cluster -- pr

.PHONY: run
run: deps ## Run the operator from source against the current kubeconfig: make run ARGS="--namespace team-a"
	npm run -s start -- $(ARGS)

# make deploy: the operator image to run, and config/ (cluster-wide) or config/namespaced.
IMG ?= ghcr.io/teal-dev/teal:0.1.0
CONFIG ?= config
KUBECTL ?= kubectl

.PHONY: deploy
deploy: ## Install Teal into the current kubectl context: make deploy IMG=registry/teal:tag [CONFIG=config/namespaced]
	@# kustomize takes relative paths only, and sets the image without editing config/.
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	img='$(IMG)' && name="$${img%:*}" && tag="$${img##*:}" && \
	if [[ "$$tag" == */* || "$$name" == "$$img" ]]; then name="$$img"; tag=latest; fi && \
	printf 'resources: [%s]\nimages: [{name: ghcr.io/teal-dev/teal, newName: "%s", newTag: "%s"}]\n' \
	  "$$(realpath --relative-to="$$tmp" '$(CONFIG)')" "$$name" "$$tag" >"$$tmp/kustomization.yaml" && \
	$(KUBECTL) apply --server-side -k "$$tmp"

.PHONY: undeploy
undeploy: ## Remove what make deploy installed, the CRD and so every App with it
	$(KUBECTL) delete --ignore-not-found -k $(CONFIG)
