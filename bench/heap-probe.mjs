// Preloaded into the operator by the bench (node --expose-gc --import):
// on SIGUSR2 it collects garbage and writes process.memoryUsage() to
// $TEAL_BENCH_HEAP_FILE, so the bench reads the heap after GC without a hook
// in the operator. JavaScript, not TypeScript, so that loading it does not
// load Node's type stripper into a bundled operator.
import { writeFileSync } from 'node:fs';

const file = process.env.TEAL_BENCH_HEAP_FILE;
if (file && typeof globalThis.gc === 'function') {
  let seq = 0;
  process.on('SIGUSR2', () => {
    globalThis.gc();
    seq += 1;
    writeFileSync(file, JSON.stringify({ seq, ...process.memoryUsage() }));
  });
}
