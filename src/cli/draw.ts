// How `get` and `previews` draw their view: once, or followed with --watch.
import { EXIT } from './errors.ts';
import type { Flags } from './flags.ts';
import type { Session } from './kube.ts';
import { type RestReader, restReader } from './rest.ts';

/**
 * A view drawn once, or followed with --watch: a single draw reads through
 * rest.ts when it can (no client-node to load), else through kube.ts's Session,
 * which --watch always uses. `get` and `previews` share it.
 */
export async function drawOnceOrWatch<V>(
  flags: Flags,
  load: (reader: RestReader | Session) => Promise<V>,
  show: (view: V) => string,
  watch: (session: Session) => Promise<number>,
): Promise<number> {
  const fast = flags.watch ? undefined : await restReader(flags);
  if (fast) {
    try {
      process.stdout.write(show(await load(fast)));
    } finally {
      fast.close();
    }
    return EXIT.ok;
  }
  const { Session } = await import('./kube.ts');
  const session = new Session(flags);
  if (!flags.watch) {
    process.stdout.write(show(await load(session)));
    return EXIT.ok;
  }
  return watch(session);
}
