// `kubectl teal version`: the version of this plugin, from package.json (which
// the bundle carries inside it, as it runs without the repository).
import pkg from '../../../package.json' with { type: 'json' };
import { EXIT } from '../errors.ts';

export function version(): number {
  process.stdout.write(`kubectl-teal v${pkg.version} (node ${process.version})\n`);
  return EXIT.ok;
}
