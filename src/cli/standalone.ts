// The plugin's entry as a single executable (scripts/standalone-cli.ts): Node
// runs it from the executable's own blob, as CommonJS, with its V8 code cache,
// so Node's compile cache has nothing to add. Called as kubectl_complete-teal
// (a link or copy of the executable: kubectl's plugin completion), it answers
// as `kubectl-teal __complete ...`, as bin/kubectl-teal does.
import { basename } from 'node:path';
import { COMPLETE } from './complete-protocol.ts';
import { run } from './main.ts';

// A single executable's argv: [the executable, the name it was called by, ...arguments].
const called = basename(process.argv[1] ?? '');
const args = process.argv.slice(2);
void run(called === 'kubectl_complete-teal' ? [COMPLETE, ...args] : args);
