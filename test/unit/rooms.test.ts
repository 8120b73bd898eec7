// The rooms of src/ (its folders, and the operator's own files at its top) form
// a DAG: a file imports files of its own room or of a room ranked below it, and
// no files import each other in a cycle, `import type` included. `npm run lint`
// runs this file, so an import against the order fails the lint.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The one declaration of the order, lowest first. Rooms of one rank know
 * nothing of each other. Why each stands where it does:
 * - app: Teal's vocabulary, what every other room speaks: the App's schema and
 *   conditions, the labels and hashes on what it owns, the signature it checks
 *   and sends. kube: Kubernetes machinery that knows no App (informers,
 *   workqueue, elections, errors). Neither needs the other.
 * - git: resolves the refs an App names.
 * - analysis and build: the checks and the image builds, each a pure planner
 *   with its own Jobs; neither uses the other.
 * - rollout: the blue/green planner, which gates on checks and runs what a build made.
 * - notify: tells the outside about the planners' Events and the App's status.
 *   previews: a child App per pull request and its status back on the pull
 *   request (issue #28); it plans over app's vocabulary and speaks to the git
 *   hosts, as notify speaks to its destinations; neither uses the other.
 * - controller and api: the reconciler that carries out the planners' actions,
 *   and the HTTP API beside it, which reads the same caches through app and
 *   kube but not the controller (the dashboard will stand here too).
 * - main (src/*.ts, the operator process) and cli (kubectl teal): entry points.
 * - ui: the dashboard's browser code (issue #25), bundled apart from the
 *   operator (scripts/bundle-ui.ts). It speaks to the operator over HTTP only,
 *   so of the rest it may import app, the shared vocabulary, and nothing else
 *   (ONLY_FROM); nothing imports it.
 */
const RANKS: Readonly<Record<string, number>> = {
  app: 0,
  kube: 0,
  git: 1,
  analysis: 2,
  build: 2,
  rollout: 3,
  notify: 4,
  previews: 4,
  controller: 5,
  api: 5,
  main: 6,
  cli: 6,
  ui: 7,
};

/** Rooms that may import only these other rooms, whatever their rank allows. */
const ONLY_FROM: Readonly<Record<string, readonly string[]>> = { ui: ['app'] };

interface Edge {
  from: string;
  to: string;
}

const ROOT = resolve(import.meta.dirname, '../..');

/** The room of a file under src/: its folder, or main for src/*.ts. */
function roomOf(file: string): string {
  const parts = file.split('/');
  return parts.length > 2 ? (parts[1] ?? '') : 'main';
}

/**
 * The relative module specifiers of a source text, read by TypeScript's own
 * scanner: import and export declarations (`import type` too) and import().
 */
function specifiers(text: string): string[] {
  return ts
    .preProcessFile(text, true, true)
    .importedFiles.map((f) => f.fileName)
    .filter((name) => name.startsWith('.'));
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.tsx?$/.test(entry.name) ? [relative(ROOT, path)] : [];
  });
}

/** Every import between files of src/, paths relative to the repository (package.json, read for its version, is none). */
function importGraph(): Edge[] {
  return sourceFiles(join(ROOT, 'src')).flatMap((from) =>
    specifiers(readFileSync(join(ROOT, from), 'utf8'))
      .map((spec) => ({ from, to: relative(ROOT, resolve(ROOT, dirname(from), spec)) }))
      .filter(({ to }) => to.startsWith('src/')),
  );
}

/** The imports against the order, as "from -> to (room -> room)"; a room without a rank is one too. */
function upward(edges: readonly Edge[], ranks: Readonly<Record<string, number>> = RANKS): string[] {
  return edges.flatMap(({ from, to }) => {
    const [a, b] = [roomOf(from), roomOf(to)];
    if (a === b) return [];
    const only = ONLY_FROM[a];
    if (only && !only.includes(b)) return [`${from} -> ${to} (${a} imports only ${only.join(', ')})`];
    const [ra, rb] = [ranks[a], ranks[b]];
    if (ra !== undefined && rb !== undefined && rb < ra) return [];
    return [`${from} -> ${to} (${a} ${ra ?? 'unranked'} -> ${b} ${rb ?? 'unranked'})`];
  });
}

/** The import cycles among files, each as its files (Tarjan's strongly connected components). */
function cycles(edges: readonly Edge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const { from, to } of edges) next.set(from, [...(next.get(from) ?? []), to]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v) ?? 0);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string | undefined;
    do {
      w = stack.pop();
      if (w === undefined) break;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || next.get(v)?.includes(v)) found.push(component.sort());
  };
  for (const v of next.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe('the rooms of src/', () => {
  const graph = importGraph();

  it('reads the imports of the real source', () => {
    expect(graph.length).toBeGreaterThan(100);
    expect(graph).toContainEqual({ from: 'src/controller/executor.ts', to: 'src/app/labels.ts' });
    expect(graph).toContainEqual({ from: 'src/ui/main.tsx', to: 'src/app/dashboard-pages.ts' });
  });

  it('import only their own room and rooms ranked below it', () => {
    expect(upward(graph)).toEqual([]);
  });

  it('have no import cycle between files', () => {
    expect(cycles(graph)).toEqual([]);
  });
});

describe('the rooms check', () => {
  it('reads every static and dynamic import form, type-only ones too', () => {
    const text = [
      "import type { A } from './a.ts';",
      "import { type B, c } from '../kube/b.ts';",
      "export { d } from './d.ts';",
      "export type * from './e.ts';",
      "const f = await import('./f.ts');",
      "import { z } from 'zod';",
    ].join('\n');
    expect(specifiers(text)).toEqual(['./a.ts', '../kube/b.ts', './d.ts', './e.ts', './f.ts']);
  });

  it('refuses an import of a room above, beside or without a rank', () => {
    const edges: Edge[] = [
      { from: 'src/kube/informer.ts', to: 'src/app/schema.ts' },
      { from: 'src/build/job.ts', to: 'src/rollout/labels.ts' },
      { from: 'src/api/actions.ts', to: 'src/controller/cache.ts' },
      { from: 'src/rollout/plan.ts', to: 'src/somewhere/new.ts' },
      { from: 'src/controller/reconciler.ts', to: 'src/rollout/planner.ts' },
      { from: 'src/main.ts', to: 'src/config.ts' },
      { from: 'src/ui/main.tsx', to: 'src/app/dashboard-pages.ts' },
      { from: 'src/ui/api.ts', to: 'src/api/session.ts' },
    ];
    expect(upward(edges)).toEqual([
      'src/kube/informer.ts -> src/app/schema.ts (kube 0 -> app 0)',
      'src/build/job.ts -> src/rollout/labels.ts (build 2 -> rollout 3)',
      'src/api/actions.ts -> src/controller/cache.ts (api 5 -> controller 5)',
      'src/rollout/plan.ts -> src/somewhere/new.ts (rollout 3 -> somewhere unranked)',
      'src/ui/api.ts -> src/api/session.ts (ui imports only app)',
    ]);
  });

  it('finds a cycle, however long, and a file importing itself', () => {
    const edges: Edge[] = [
      { from: 'a', to: 'b' },
      { from: 'b', to: 'c' },
      { from: 'c', to: 'a' },
      { from: 'c', to: 'd' },
      { from: 'e', to: 'e' },
    ];
    expect(cycles(edges)).toEqual([['a', 'b', 'c'], ['e']]);
  });
});
