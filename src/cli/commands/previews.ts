// `kubectl teal previews APP [--watch]`: the previews of an App's pull requests
// (issue #28 item 10). As `get`, a single draw reads through rest.ts when it
// can; --watch uses kube.ts's Session and draws again when the parent App or
// one of its child Apps changes. The child Apps are ordinary Apps: `get`,
// `status`, `promote` ... take their names.
import { APP_RESOURCE } from '../../app/app-api.ts';
import { type PreviewsView, previewsView } from '../../app/previews-view.ts';
import { type PreviewsReader, previewSelector } from '../app-object.ts';
import { drawOnceOrWatch, redrawOnChange } from '../draw.ts';
import { CliError } from '../errors.ts';
import type { Flags } from '../flags.ts';
import type { Session } from '../kube.ts';
import { formatData, useColour } from '../output.ts';
import { renderPreviews, requirePreviews } from '../previews.ts';

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

/** Draws again after each burst of changes of the parent or its children (redrawOnChange). */
async function watchPreviews(session: Session, name: string, show: (view: PreviewsView) => string): Promise<number> {
  const { paths } = await import('../kube.ts');
  const ns = session.namespace;
  return redrawOnChange(
    () => loadPreviews(session, name),
    show,
    ({ changed, refused, degrade }) => {
      // Without the children's watch (RBAC), the periodic redraw still catches up.
      const stops = [
        session.watchApp(name, changed, refused),
        session.watch(paths.apps(ns), { labelSelector: previewSelector(name) }, changed, degrade, {
          verb: 'watch',
          resource: APP_RESOURCE,
          namespace: ns,
        }),
      ];
      return {
        stop: () => {
          for (const stop of stops) stop();
        },
      };
    },
  );
}
