// Labels and annotations on the child Apps previews make (issue #28): the
// parent's name and the pull request's number select them (kubectl teal
// previews, the planner's own read), and the annotations carry what the
// planner needs again on its next round, so the child App is its own record.
// In app, the shared vocabulary: the planner (previews) writes them, and
// kubectl teal previews, the API and the dashboard read them.
import { GROUP } from './app-api.ts';

/** On a child App: the name of the App whose pull request it previews. */
export const LABEL_PREVIEW_OF = `${GROUP}/preview-of`;
/** On a child App: the pull request's number. */
export const LABEL_PULL_REQUEST = `${GROUP}/pull-request`;

/** The head commit the child builds (its spec.source.git.ref): the full SHA. */
export const ANN_PR_HEAD = `${GROUP}/pull-request-head`;
/** The provider's ref for the pull request's head (refs/pull/N/head, ...), where that commit is fetched from. */
export const ANN_PR_REF = `${GROUP}/pull-request-ref`;
/** The pull request's page. */
export const ANN_PR_URL = `${GROUP}/pull-request-url`;
/** When the preview last saw activity (made, a new commit, a wake): the clock of sleepAfter and deleteAfter. */
export const ANN_ACTIVE_AT = `${GROUP}/preview-active-at`;
/** A request to wake the preview, as teal.dev/refresh-requested-at is one to refresh: an RFC 3339 time. */
export const ANN_WAKE = `${GROUP}/wake-requested-at`;
/** A hash of what the planner last wrote to the child, to write again only on change. */
export const ANN_PREVIEW_SPEC = `${GROUP}/preview-spec`;
/**
 * On a parent App: a pull-request webhook's hint that its pull requests changed (an RFC 3339 time).
 * The receiver writes it; the planner lists at once when it is newer than the last listing.
 */
export const ANN_PREVIEWS_REQUESTED = `${GROUP}/previews-requested-at`;
