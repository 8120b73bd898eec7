// `make manifests`: the CRDs from the zod schemas, into config/crd and the chart's
// crds/, and the chart's values.schema.json.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderTemplateCrd } from '../src/analysis/crd-yaml.ts';
import { renderCrd } from '../src/app/crd-yaml.ts';
import { renderValuesSchema } from './chart-values.ts';

const write = (path: string, text: string) => {
  const target = fileURLToPath(new URL(`../${path}`, import.meta.url));
  writeFileSync(target, text);
  console.log(`wrote ${path}`);
};
const crds: [string, string][] = [
  ['teal.dev_apps.yaml', renderCrd()],
  ['teal.dev_analysistemplates.yaml', renderTemplateCrd()],
];
for (const [file, text] of crds) {
  write(`config/crd/${file}`, text);
  write(`charts/teal/crds/${file}`, text);
}
write('charts/teal/values.schema.json', renderValuesSchema());
