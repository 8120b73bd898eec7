import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ChartValuesSchema, renderValuesSchema } from '../../scripts/chart-values.ts';
import { renderCrd } from '../../src/app/crd-yaml.ts';

describe('the checked-in CRD', () => {
  it.each(['config/crd/teal.dev_apps.yaml', 'charts/teal/crds/teal.dev_apps.yaml'])(
    'in %s equals a fresh generation from the zod schema (run `make manifests`)',
    (path) => {
      expect(readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8')).toBe(renderCrd());
    },
  );

  it('holds only what a structural schema may: no $ref, const, additionalProperties beside properties', () => {
    const crd = renderCrd();
    expect(crd).not.toMatch(/\$ref|definitions|patternProperties|\bconst\b|uniqueItems|\$schema/);
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
