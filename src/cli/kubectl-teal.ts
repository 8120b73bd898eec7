// The plugin's entry (bin/kubectl-teal runs it, or its bundle dist/cli/kubectl-teal.js).
// Node's compile cache goes on before anything else is loaded, so main.ts and
// every chunk a command imports are compiled from the cache after the first
// run (in NODE_COMPILE_CACHE, else the system's temporary folder; Node checks
// each file's contents, so a stale entry is never used). A plugin process is
// short: its start is most of its time.
import { enableCompileCache } from 'node:module';

enableCompileCache();
await (await import('./main.ts')).run(process.argv.slice(2));
