// When the previews planner lists the pull requests next (issue #28 item 2):
// one interval after the last listing, or at once when a pull-request webhook
// asked since (ANN_PREVIEWS_REQUESTED on the parent App). The webhook is only
// a hint: it moves the next listing sooner, never sooner than the provider's
// retryAt, and a value that is not a time, or one in the future, is ignored
// (a future one would make every listing look older than the request).
import { rfc3339Time, shown, type ValueProblem, ValueReader } from '../app/cluster-values.ts';
import { ANN_PREVIEWS_REQUESTED } from '../app/preview-labels.ts';

export interface PollInput {
  annotations: Record<string, string> | undefined;
  /** The App, for the problems' messages ("App team/weather"). */
  object: string;
  /** When the listing this round is made from was read (or tried). */
  listedAtMs: number;
  intervalMs: number;
  /** The provider's earliest next request, when it said one. */
  retryAtMs?: number | undefined;
  nowMs: number;
}

export interface Poll {
  atMs: number;
  /** The request was newer than the listing: the listing is due at once (or at retryAt). */
  requested: boolean;
  /** Why the request annotation was ignored, if it was. */
  problems: ValueProblem[];
}

/** The time a webhook asked for a listing, or the problem that makes Teal ignore the annotation. */
export function readPreviewsRequest(
  annotations: Record<string, string> | undefined,
  object: string,
  nowMs: number,
): { at?: number; problems: ValueProblem[] } {
  const read = new ValueReader(object);
  const at = read.annotation(annotations, ANN_PREVIEWS_REQUESTED, rfc3339Time);
  if (at !== undefined && at > nowMs) {
    read.report(
      'InvalidAnnotation',
      `annotation ${ANN_PREVIEWS_REQUESTED}=${shown(String(annotations?.[ANN_PREVIEWS_REQUESTED]))}`,
      'is in the future',
    );
    return { problems: read.problems };
  }
  return { ...(at !== undefined ? { at } : {}), problems: read.problems };
}

/** The next listing: the interval after this one, at once if a request came since, never before retryAt. */
export function nextPoll(input: PollInput): Poll {
  const { at, problems } = readPreviewsRequest(input.annotations, input.object, input.nowMs);
  const requested = at !== undefined && at > input.listedAtMs;
  const retry = input.retryAtMs !== undefined && Number.isFinite(input.retryAtMs) ? input.retryAtMs : undefined;
  const atMs = requested ? Math.max(input.nowMs, retry ?? input.nowMs) : (retry ?? input.listedAtMs + input.intervalMs);
  return { atMs, requested, problems };
}
