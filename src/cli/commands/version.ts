// `kubectl teal version`: the version of this plugin, from package.json.
import { readFileSync } from 'node:fs';
import { EXIT } from '../errors.ts';

export function version(): number {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
    version?: string;
  };
  process.stdout.write(`kubectl-teal v${pkg.version ?? 'unknown'} (node ${process.version})\n`);
  return EXIT.ok;
}
