// How `get` and `previews` draw their view: once, or followed with --watch
// (drawn again on every change, and every few seconds for the ages).
import { CliError, EXIT } from './errors.ts';
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

/**
 * How often --watch draws again with nothing changed, so the ages move: every
 * few seconds on a terminal, every 30 s into a file or a pipe (each draw is a
 * new block there). TEAL_REDRAW_SECONDS sets it; 0 turns it off.
 */
export function redrawEveryMs(tty: boolean): number | undefined {
  const set = process.env.TEAL_REDRAW_SECONDS;
  if (set === undefined || set === '') return tty ? 5_000 : 30_000;
  const seconds = Number(set);
  if (!Number.isFinite(seconds) || seconds < 0) {
    throw new CliError(`TEAL_REDRAW_SECONDS: a number of seconds (0 for never), got ${JSON.stringify(set)}`);
  }
  return seconds === 0 ? undefined : seconds * 1000;
}

/** What a view's watches tell the --watch loop. */
export interface WatchSignals {
  /** Something changed: draw again once the burst is over. */
  changed: () => void;
  /** The one essential watch (the App's) was refused: stop, with an error. */
  refused: (err: CliError) => void;
  /** Another watch was refused: go on, the periodic redraw still catches up. */
  degrade: (err: CliError) => void;
}

/** The watches a view opened: how to stop them, and what to do with each fresh load. */
export interface Watches<T> {
  stop: () => void;
  /** Called with each load before it is drawn (get moves its build watches to where the App's builds are). */
  loaded?: (loaded: T) => void;
}

/**
 * --watch: draws the view, then again after each burst of changes its watches
 * signal, and every few seconds for the ages (redrawEveryMs). Runs until Ctrl-C,
 * or until the essential watch is refused. `get` and `previews` share it; each
 * opens its own watches in `open`, after the first draw.
 */
export async function redrawOnChange<T>(
  load: () => Promise<T>,
  show: (loaded: T) => string,
  open: (signals: WatchSignals, first: T) => Watches<T>,
): Promise<number> {
  const { oneAtATime } = await import('./kube.ts');
  const tty = process.stdout.isTTY === true;
  const every = redrawEveryMs(tty);
  // The first load fails fast (a missing App, a refusal): nothing is watched then.
  const first = await load();
  let last = show(first);
  const draw = (text: string) => process.stdout.write(tty ? `\x1b[H\x1b[2J${text}` : `${text}\n`);
  draw(last);

  return new Promise<number>((resolve) => {
    let pending: NodeJS.Timeout | undefined;
    const redraw = oneAtATime(async () => {
      try {
        const loaded = await load();
        watches.loaded?.(loaded);
        const text = show(loaded);
        // Without a terminal each change is printed once; unchanged views are skipped.
        if (text !== last) draw(text);
        last = text;
      } catch (err) {
        process.stderr.write(`error: ${(err as Error).message}\n`);
      }
    });
    const changed = () => {
      clearTimeout(pending);
      // Changes come in bursts (a scale-up touches the ReplicaSet and every pod): draw once per burst.
      pending = setTimeout(redraw, 150);
    };
    const finish = (code: number) => {
      watches.stop();
      clearTimeout(pending);
      clearInterval(ticker);
      process.off('SIGINT', interrupted);
      resolve(code);
    };
    const refused = (err: CliError) => {
      process.stderr.write(`error: ${err.message}\n`);
      finish(EXIT.error);
    };
    const degrade = (err: CliError) => process.stderr.write(`warning: ${err.message}: redrawing every few seconds\n`);
    const interrupted = () => finish(EXIT.ok);
    process.once('SIGINT', interrupted);
    const ticker = every === undefined ? undefined : setInterval(redraw, every);
    // A watch reports a refusal only after it started (Session.watch is asynchronous), so `watches` is set by then.
    const watches = open({ changed, refused, degrade }, first);
  });
}
