import { stringify } from 'yaml';
import { buildCrd } from './crd.ts';

const HEADER = '# Generated from src/app/schema.ts by `make manifests`. Do not edit.\n';

/** The CRD as checked in under config/crd. */
export function renderCrd(): string {
  // kubectl and the API server read YAML 1.1, where a bare n or on is a boolean: quote those.
  return HEADER + stringify(buildCrd(), { lineWidth: 0, version: '1.1' });
}
