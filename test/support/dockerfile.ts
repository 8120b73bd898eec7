// What the production image runs, read from the Dockerfile: the bundle test and the bench run
// dist/teal.js the same way, and the chart's default node flags must be the image's.
import { readFileSync } from 'node:fs';

const DOCKERFILE = new URL('../../Dockerfile', import.meta.url);

/** The node flags of the Dockerfile's ENTRYPOINT ["node", ...flags, "dist/teal.js"]. */
export function entrypointFlags(): string[] {
  const line = /^ENTRYPOINT\s+(\[.*\])\s*$/m.exec(readFileSync(DOCKERFILE, 'utf8'))?.[1];
  const argv = JSON.parse(line ?? '[]') as string[];
  if (argv[0] !== 'node' || argv.at(-1) !== 'dist/teal.js') {
    throw new Error(`the Dockerfile's ENTRYPOINT is not ["node", ...flags, "dist/teal.js"]: ${line}`);
  }
  return argv.slice(1, -1);
}

/** The files the image copies from the build stage's dist/ (COPY --from=build /src/dist/x ... ./dist/). */
export function copiedFromDist(): string[] {
  const text = readFileSync(DOCKERFILE, 'utf8').replace(/\\\n/g, ' ');
  return [...text.matchAll(/\/src\/dist\/(\S+)/g)].map((m) => m[1] as string);
}

/** The Dockerfile's ENV lines (MALLOC_ARENA_MAX). */
export function imageEnv(): Record<string, string> {
  return Object.fromEntries(
    [...readFileSync(DOCKERFILE, 'utf8').matchAll(/^ENV\s+([A-Z_][A-Z0-9_]*)=(\S+)\s*$/gm)].map((m) => [
      m[1] as string,
      m[2] as string,
    ]),
  );
}
