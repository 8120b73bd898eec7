import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ChartValuesSchema, renderValuesSchema } from '../../scripts/chart-values.ts';
import { renderTemplateCrd } from '../../src/analysis/crd-yaml.ts';
import { renderCrd } from '../../src/app/crd-yaml.ts';

const CRDS: [string, () => string][] = [
  ['teal.dev_apps.yaml', renderCrd],
  ['teal.dev_analysistemplates.yaml', renderTemplateCrd],
];
const checkedIn = CRDS.flatMap(([file, render]) =>
  ['config/crd', 'charts/teal/crds'].map((dir) => ({ path: `${dir}/${file}`, render })),
);
const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

describe('the checked-in CRDs', () => {
  it.each(checkedIn)(
    'in $path equal a fresh generation from the zod schema (run `make manifests`)',
    ({ path, render }) => {
      expect(read(path)).toBe(render());
    },
  );

  it.each(CRDS)(
    '%s holds only what a structural schema may: no $ref, const, additionalProperties beside properties',
    (_, render) => {
      expect(render()).not.toMatch(/\$ref|definitions|patternProperties|\bconst\b|uniqueItems|\$schema/);
    },
  );

  // kubectl reads YAML 1.1: a bare `n` (a field of measurement status) would be false there.
  it.each(CRDS)('%s reads the same as YAML 1.1, as kubectl reads it, and as YAML 1.2', (_, render) => {
    expect(parse(render(), { version: '1.1' })).toEqual(parse(render()));
  });

  it('config/crd/kustomization.yaml installs every CRD', () => {
    expect(parse(read('config/crd/kustomization.yaml')).resources).toEqual(CRDS.map(([file]) => file));
  });
});

describe('the chart values', () => {
  it('schema equals a fresh generation from scripts/chart-values.ts (run `make manifests`)', () => {
    const checkedIn = readFileSync(new URL('../../charts/teal/values.schema.json', import.meta.url), 'utf8');
    expect(checkedIn).toBe(renderValuesSchema());
  });

  it('in values.yaml are valid against that schema', () => {
    const values = parse(readFileSync(new URL('../../charts/teal/values.yaml', import.meta.url), 'utf8'));
    expect(ChartValuesSchema.safeParse(values).error).toBeUndefined();
  });
});
