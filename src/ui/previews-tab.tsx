// The Previews tab of a parent App's page (issue #28 item 10): one row per pull
// request of status.previews, joined with its child App by the API
// (app/previews-view.ts, the rule `kubectl teal previews` draws too), and the
// PreviewsListed condition. Every text here comes from a git host or from
// status: it is rendered as text by Preact, a title in <bdi> so right-to-left
// characters cannot reorder the row, and a URL becomes a link only through
// safeWebUrl (plain http(s), no credentials). Each child's phase is its live
// row's, so it moves without the parent changing.
import { appPageUrl } from '../app/dashboard-pages.ts';
import {
  CHILD_WORDS,
  type PreviewRow,
  type PreviewsView,
  previewNote,
  safeWebUrl,
  stateText,
  stateTone,
} from '../app/previews-view.ts';
import { appRow } from './live.ts';

export function PreviewsTab(props: { view: PreviewsView }) {
  const { view } = props;
  return (
    <section aria-labelledby="previews-h" data-testid="previews">
      <h2 id="previews-h">Previews</h2>
      <Listing view={view} />
      {view.previews.length === 0 ? (
        <p class="muted">No pull request has a preview, or waits for one.</p>
      ) : (
        <table class="detail previews">
          <thead>
            <tr>
              <th scope="col">Pull request</th>
              <th scope="col">Title</th>
              <th scope="col">Head</th>
              <th scope="col">State</th>
              <th scope="col">Preview</th>
              <th scope="col">App</th>
              <th scope="col">Message</th>
            </tr>
          </thead>
          <tbody>
            {view.previews.map((row, i) => (
              <PreviewLine key={`${row.number ?? '?'}-${row.app ?? i}`} row={row} namespace={view.namespace} />
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** When the pull requests were last listed, and the PreviewsListed condition when it is not True: why the list may be stale. */
function Listing(props: { view: PreviewsView }) {
  const { listedAt, notListed, previews } = props.view;
  return (
    <>
      <p data-testid="previews-listed">
        {previews.length} {previews.length === 1 ? 'preview' : 'previews'},{' '}
        {listedAt ? (
          <>
            pull requests last listed <time dateTime={listedAt}>{listedAt}</time>
          </>
        ) : (
          'pull requests not listed yet'
        )}
      </p>
      {notListed ? (
        <p class="error message" data-testid="previews-not-listed">
          PreviewsListed: {notListed.status}
          {notListed.reason ? ` (${notListed.reason})` : ''}
          {notListed.message ? `: ${notListed.message}` : ''}
        </p>
      ) : null}
    </>
  );
}

function PreviewLine(props: { row: PreviewRow; namespace: string }) {
  const { row, namespace } = props;
  const page = safeWebUrl(row.webUrl);
  const number = row.number === undefined ? '?' : `#${row.number}`;
  return (
    <tr data-testid={`preview-${row.number ?? row.app ?? '?'}`}>
      <td class="num">{page ? <a href={page}>{number}</a> : number}</td>
      <td class="message title">{row.title ? <bdi>{row.title}</bdi> : ''}</td>
      <td class="id">{row.head ? row.head.slice(0, 7) : '—'}</td>
      <td>
        <span class={`phase phase-${stateTone(row.state).toLowerCase()}`}>{stateText(row.state)}</span>
      </td>
      <td class="message">
        <PreviewUrl row={row} />
      </td>
      <td class="id">
        <ChildApp row={row} namespace={namespace} />
      </td>
      <td class="message">{previewNote(row)}</td>
    </tr>
  );
}

/** The preview's URL: a link once it is ready, as text before (it does not answer yet). */
function PreviewUrl(props: { row: PreviewRow }) {
  const { url, state } = props.row;
  if (!url) return <>—</>;
  const safe = safeWebUrl(url);
  return safe && state === 'Ready' ? <a href={safe}>{url}</a> : <>{url}</>;
}

/** The child App, linking to its own page when there is one, with its phase from its live row. */
function ChildApp(props: { row: PreviewRow; namespace: string }) {
  const { row, namespace } = props;
  if (!row.app) return <>—</>;
  if (row.child !== 'found' && row.child !== 'unrecorded') {
    return (
      <>
        {row.app} <span class="muted">({CHILD_WORDS[row.child]})</span>
      </>
    );
  }
  const phase = appRow(namespace, row.app).value?.phase || row.phase;
  return (
    <>
      <a href={appPageUrl(namespace, row.app)}>{row.app}</a>
      {phase ? <span class={`phase phase-${phase.toLowerCase()}`}> {phase}</span> : null}
    </>
  );
}
