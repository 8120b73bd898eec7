// `make manifests`: writes config/crd/teal.dev_apps.yaml from the zod schema.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderCrd } from '../src/app/crd-yaml.ts';

const target = fileURLToPath(new URL('../config/crd/teal.dev_apps.yaml', import.meta.url));
writeFileSync(target, renderCrd());
console.log(`wrote ${target}`);
