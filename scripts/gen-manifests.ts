// `make manifests`: the CRD from the zod schema, into config/crd and the chart's
// crds/, and the chart's values.schema.json.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderCrd } from '../src/app/crd-yaml.ts';
import { renderValuesSchema } from './chart-values.ts';

const write = (path: string, text: string) => {
  const target = fileURLToPath(new URL(`../${path}`, import.meta.url));
  writeFileSync(target, text);
  console.log(`wrote ${path}`);
};
const crd = renderCrd();
write('config/crd/teal.dev_apps.yaml', crd);
write('charts/teal/crds/teal.dev_apps.yaml', crd);
write('charts/teal/values.schema.json', renderValuesSchema());
