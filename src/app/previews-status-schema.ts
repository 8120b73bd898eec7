// The parent App's record of its previews in App status (previews-schema.ts has
// spec.previews). A module of its own so that a reader of status builds the
// status schemas without the spec's (src/app/status-reader.ts).
import { z } from 'zod';

// ---- status: the parent App's record of its previews ----

/** Where a pull request's preview stands, as its comment, `kubectl teal previews` and the metrics say it. */
export const PREVIEW_STATES = [
  /** A fork's head commit without an approval: nothing of it is built. */
  'AwaitingApproval',
  'Building',
  /** Built; the release of the head commit is under way (its checks included). */
  'Deploying',
  'Ready',
  /** The build, the checks or the release of the head commit failed. */
  'Failed',
  /** Scaled to zero (sleepAfter, maxActive), its ReplicaSet kept: a new commit or a wake brings it back. */
  'Asleep',
  /** Deleted after deleteAfter idle: made again by a new commit. */
  'Expired',
] as const;
export type PreviewState = (typeof PREVIEW_STATES)[number];

/** The states every provider's commit status has (GitLab's running and Bitbucket's INPROGRESS are pending). */
export const COMMIT_STATUS_STATES = ['pending', 'success', 'failure', 'error'] as const;

const time = z.string().describe('RFC 3339 time.');

export const PreviewReportedSchema = z
  .strictObject({
    status: z
      .strictObject({
        sha: z.string().max(64),
        state: z.enum(COMMIT_STATUS_STATES),
        description: z.string().max(140),
        targetUrl: z.string().max(2048).optional(),
        at: time,
      })
      .optional()
      .describe('The last commit status written.'),
    comment: z
      .strictObject({ hash: z.string().max(64), at: time })
      .optional()
      .describe('The hash of the comment body last written, and when: the next edit waits 10s from then.'),
  })
  .describe('What was last written on the pull request, recorded once the provider accepted it.');

export const PreviewStatusSchema = z.strictObject({
  number: z.int().min(1),
  title: z
    .string()
    .max(256)
    .optional()
    .describe("The pull request's title on one line, at most 200 characters, credentials masked: shown as text."),
  webUrl: z
    .string()
    .max(2048)
    .optional()
    .describe("The pull request's page, when the provider gave a plain http(s) URL without credentials."),
  name: z.string().max(63).optional().describe('The child App, while there is one.'),
  head: z.string().max(64).describe('The head commit of the pull request.'),
  state: z.enum(PREVIEW_STATES),
  url: z.string().max(2048).optional(),
  message: z.string().max(1024).optional(),
  expired: z
    .string()
    .max(64)
    .optional()
    .describe('The head commit whose preview deleteAfter removed: not made again until a new commit.'),
  reported: PreviewReportedSchema.optional(),
});

/** The pull requests status.previews records at most: the highest numbers (the newest) are kept. */
export const MAX_PREVIEW_RECORDS = 1000;

export const PreviewsStatusSchema = z
  .strictObject({
    listedAt: time.optional().describe('When the pull requests were last listed.'),
    pullRequests: z
      .array(PreviewStatusSchema)
      .max(1000)
      .optional()
      .meta({
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['number'],
      }),
  })
  .describe('The pull requests that have, or wait for, a preview.');

export type PreviewStatus = z.output<typeof PreviewStatusSchema>;
export type PreviewsStatus = z.output<typeof PreviewsStatusSchema>;
export type PreviewReported = z.output<typeof PreviewReportedSchema>;
