import { stringify } from 'yaml';
import { buildCrd } from './crd.ts';

const HEADER = '# Generated from src/app/schema.ts by `make manifests`. Do not edit.\n';

/** The CRD as checked in under config/crd. */
export function renderCrd(): string {
  return HEADER + stringify(buildCrd(), { lineWidth: 0 });
}
