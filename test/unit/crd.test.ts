import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderCrd } from '../../src/app/crd-yaml.ts';

describe('the checked-in CRD', () => {
  it('equals a fresh generation from the zod schema (run `make manifests`)', () => {
    const checkedIn = readFileSync(new URL('../../config/crd/teal.dev_apps.yaml', import.meta.url), 'utf8');
    expect(checkedIn).toBe(renderCrd());
  });

  it('holds only what a structural schema may: no $ref, const, additionalProperties beside properties', () => {
    const crd = renderCrd();
    expect(crd).not.toMatch(/\$ref|definitions|patternProperties|\bconst\b|uniqueItems|\$schema/);
  });
});
