# The Teal operator: bundled with esbuild into one JavaScript file (scripts/bundle.ts),
# run on node:24-slim as non-root. The bundle holds every package it uses, so the
# image has no node_modules; why one file, and what each flag saves: docs/memory.md.
FROM node:24-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts/bundle.ts scripts/bundle-ui.ts scripts/bundled-packages.ts scripts/node-bundle.ts ./scripts/
COPY src ./src
RUN npm run bundle

FROM node:24-slim
# git runs ls-remote for the operator.
RUN apt-get update && apt-get install -y --no-install-recommends git ca-certificates openssh-client \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# The source map maps a logged stack to src/ by hand; --enable-source-maps would
# hold it parsed in the heap (+80 MiB), so it is off. condition-worker.js is the
# worker thread that judges checks' conditions; teal.js finds it beside itself.
COPY --from=build /src/dist/teal.js /src/dist/teal.js.map /src/dist/teal.js.LEGAL.txt \
     /src/dist/condition-worker.js /src/dist/condition-worker.js.map ./dist/
# The dashboard's files (index.html, app.js, app.css), which teal.js finds in ui/ beside itself,
# and the licenses of the packages app.js holds.
COPY --from=build /src/dist/ui/index.html /src/dist/ui/app.js /src/dist/ui/app.css /src/dist/ui/app.js.LEGAL.txt ./dist/ui/
USER 1000:1000
# Flags for a controller's heap, measured at 1,000 Apps converging (docs/memory.md):
# a small young generation and GC on the main thread keep the peak near the steady
# state (140 MiB against 295-325 with Node's defaults), and two malloc arenas keep
# glibc from holding freed native memory per thread.
# --optimize-for-size: without it V8 grows the old generation in large steps, and
# after its collection at the end of a convergence held about 28 MiB of pages beyond
# its heap until the memory reducer's next GC, 100 s into idle: at 1,000 Apps RSS
# peaked at 160 MiB and stood at 154 for that time (120 and 113 with the flag), for
# about 6 % more CPU converging (docs/memory.md).
ENV MALLOC_ARENA_MAX=2
# NODE_OPTIONS cannot change these flags (node refuses the V8 ones there, and a command-line
# flag wins over it): the chart runs this command itself with its nodeFlags value, which
# defaults to these flags (test/e2e/chart.test.ts holds the two equal).
ENTRYPOINT ["node", "--max-semi-space-size=1", "--single-threaded-gc", "--optimize-for-size", "dist/teal.js"]
