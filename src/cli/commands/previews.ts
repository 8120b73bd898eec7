// `kubectl teal previews APP [--watch]`: the previews of an App's pull requests
// (issue #28 item 10). As `get`, a single draw reads through rest.ts when it
// can; --watch uses kube.ts's Session and draws again when the parent App or
// one of its child Apps changes. The child Apps are ordinary Apps: `get`,
// `status`, `promote` ... take their names.
import { APP_RESOURCE } from '../../app/app-api.ts';
import { type PreviewsReader, previewSelector } from '../app-object.ts';
import { drawOnceOrWatch } from '../draw.ts';
import { CliError, EXIT } from '../errors.ts';
import type { Flags } from '../flags.ts';
import type { Session } from '../kube.ts';
import { formatData, useColour } from '../output.ts';
import { type PreviewsView, previewsView, renderPreviews, requirePreviews } from '../previews.ts';

/** The parent App and its child Apps, joined; a refusal to list the children (RBAC) leaves their phases out. */
export async function loadPreviews(reader: PreviewsReader, name: string): Promise<PreviewsView> {
  const parent = await reader.getApp(name);
  requirePreviews(parent);
  try {
    return previewsView(parent, await reader.previewApps(parent));
  } catch (err) {
    if (!(err instanceof CliError) || err.httpStatus !== 403) throw err;
    return previewsView(parent, { refused: err.message });
  }
}

export async function previews(args: string[], flags: Flags): Promise<number> {
  const [name = ''] = args;
  const show = (view: PreviewsView) =>
    flags.output ? formatData(view, flags.output) : renderPreviews(view, useColour());
  return drawOnceOrWatch(
    flags,
    (reader) => loadPreviews(reader, name),
    show,
    (session) => watchPreviews(session, name, show),
  );
}

/** Draws again after each burst of changes of the parent or its children, and every few seconds for the ages. */
async function watchPreviews(session: Session, name: string, show: (view: PreviewsView) => string): Promise<number> {
  const { oneAtATime, paths } = await import('../kube.ts');
  const { redrawEveryMs } = await import('./get.ts');
  const tty = process.stdout.isTTY === true;
  const every = redrawEveryMs(tty);
  // The first draw fails fast on a missing App, an App without previews, or a refusal.
  let last = show(await loadPreviews(session, name));
  const draw = (text: string) => process.stdout.write(tty ? `\x1b[H\x1b[2J${text}` : `${text}\n`);
  draw(last);
  return new Promise<number>((resolve) => {
    let pending: NodeJS.Timeout | undefined;
    const redraw = oneAtATime(async () => {
      try {
        const text = show(await loadPreviews(session, name));
        if (text !== last) draw(text);
        last = text;
      } catch (err) {
        process.stderr.write(`error: ${(err as Error).message}\n`);
      }
    });
    const changed = () => {
      clearTimeout(pending);
      pending = setTimeout(redraw, 150);
    };
    const finish = (code: number) => {
      for (const stop of stops) stop();
      clearTimeout(pending);
      clearInterval(ticker);
      process.off('SIGINT', interrupted);
      resolve(code);
    };
    const interrupted = () => finish(EXIT.ok);
    process.once('SIGINT', interrupted);
    const ticker = every === undefined ? undefined : setInterval(redraw, every);
    const ns = session.namespace;
    const refused = (err: CliError) => {
      process.stderr.write(`error: ${err.message}\n`);
      finish(EXIT.error);
    };
    // Without the children's watch (RBAC), the periodic redraw still catches up.
    const degrade = (err: CliError) => process.stderr.write(`warning: ${err.message}: redrawing every few seconds\n`);
    const stops = [
      session.watchApp(name, changed, refused),
      session.watch(paths.apps(ns), { labelSelector: previewSelector(name) }, changed, degrade, {
        verb: 'watch',
        resource: APP_RESOURCE,
        namespace: ns,
      }),
    ];
  });
}
