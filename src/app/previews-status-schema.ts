// The parent App's record of its previews in App status (previews-schema.ts has
// spec.previews). A module of its own so that a reader of status builds the
// status schemas without the spec's (src/app/status-reader.ts).
import { z } from 'zod';
import { storedBytes } from './stored-bytes.ts';

// ---- what one record may hold ----
//
// status.previews shares the App object, and etcd's 1.5 MiB limit on it, with
// the App's spec and the rest of its status, while pull requests are written by
// anyone: every text a record keeps from them is a bounded summary (the full
// failure message is in the child App's status, the comment shows the title).

/** The longest title recorded, in characters, on one line (as the comment shows it). */
export const MAX_RECORDED_TITLE = 200;
/** The longest failure message recorded, in characters, on one line: a summary; the child App's status has it whole. */
export const MAX_RECORDED_MESSAGE = 256;
/** The longest URL recorded (the pull request's page, the preview's, a commit status's target); a longer one is not recorded. */
export const MAX_RECORDED_URL = 512;
/**
 * The most bytes one text of a record (title, message, URL) takes once stored: a title of
 * 200 "<" is 1200 bytes as the API server writes it (stored-bytes.ts), so text is cut by
 * bytes as well as characters, and a URL over it is not recorded.
 */
export const MAX_TEXT_BYTES = 512;

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
        targetUrl: z.string().max(MAX_RECORDED_URL).optional(),
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
    .max(MAX_RECORDED_TITLE)
    .optional()
    .describe(
      "The pull request's title on one line, at most 200 characters (512 bytes stored), credentials masked: shown as text.",
    ),
  webUrl: z
    .string()
    .max(MAX_RECORDED_URL)
    .optional()
    .describe(
      "The pull request's page, when the provider gave a plain http(s) URL without credentials of at most 512 bytes.",
    ),
  name: z.string().max(63).optional().describe('The child App, while there is one.'),
  head: z.string().max(64).describe('The head commit of the pull request.'),
  state: z.enum(PREVIEW_STATES),
  url: z.string().max(MAX_RECORDED_URL).optional(),
  message: z
    .string()
    .max(MAX_RECORDED_MESSAGE)
    .optional()
    .describe(
      "Why it failed, on one line, credentials masked: a summary; the child App's status has the whole message.",
    ),
  expired: z
    .string()
    .max(64)
    .optional()
    .describe('The head commit whose preview deleteAfter removed: not made again until a new commit.'),
  reported: PreviewReportedSchema.optional(),
  approval: z
    .strictObject({
      id: z.string().max(64).describe('A hash of who added the approval label and when.'),
      sha: z.string().max(64).describe('The head commit the approval was first seen on: the one it approves.'),
    })
    .optional()
    .describe("A fork's approval as Teal counts it: a later commit needs the label added again."),
});

/** The pull requests status.previews records at most (within PREVIEWS_STATUS_BUDGET). */
export const MAX_PREVIEW_RECORDS = 1000;

/**
 * The most bytes status.previews takes in the stored App. etcd refuses an object over
 * 1.5 MiB (1536 KiB), and every status write of the parent would then fail: its own
 * rollout would stop being recorded. The App's spec (twice with kubectl's
 * last-applied-configuration), the rest of its status (history, conditions,
 * notifications, analysis) and metadata.managedFields (an entry of about 300 bytes per
 * record, so up to as much again as the records) share what is left: 256 KiB here keeps
 * the previews with their managedFields under a third of the object, and still records
 * about 500 pull requests of ordinary size (a record is about 500 bytes).
 */
export const PREVIEWS_STATUS_BUDGET = 256 * 1024;

/** A record as large as the maxima let it be: every text at MAX_TEXT_BYTES, the description 140 "<" (840 bytes). */
const LARGEST_RECORD = {
  number: Number.MAX_SAFE_INTEGER,
  title: 'x'.repeat(MAX_TEXT_BYTES),
  webUrl: 'x'.repeat(MAX_TEXT_BYTES),
  name: 'x'.repeat(63),
  head: 'x'.repeat(64),
  state: 'AwaitingApproval',
  url: 'x'.repeat(MAX_TEXT_BYTES),
  message: 'x'.repeat(MAX_TEXT_BYTES),
  expired: 'x'.repeat(64),
  reported: {
    // Times are the planner's and the runner's own toISOString() (24 characters); 32 leaves room.
    status: {
      sha: 'x'.repeat(64),
      state: 'failure',
      description: '<'.repeat(140),
      targetUrl: 'x'.repeat(MAX_TEXT_BYTES),
      at: 'x'.repeat(32),
    },
    comment: { hash: 'x'.repeat(64), at: 'x'.repeat(32) },
  },
  approval: { id: 'x'.repeat(64), sha: 'x'.repeat(64) },
};

/** The most bytes one record can take once stored (a comma besides). */
export const MAX_RECORD_BYTES = storedBytes(LARGEST_RECORD) + 1;

/**
 * The most child Apps a parent keeps: as many as status.previews can always record,
 * whatever their records say, so a preview never loses its record (its `reported`,
 * which stops a report being sent again) to the budget.
 */
export const MAX_PREVIEW_CHILDREN = Math.floor(
  (PREVIEWS_STATUS_BUDGET - storedBytes({ listedAt: 'x'.repeat(32), pullRequests: [] })) / MAX_RECORD_BYTES,
);

export const PreviewsStatusSchema = z
  .strictObject({
    listedAt: time.optional().describe('When the pull requests were last listed.'),
    pullRequests: z
      .array(PreviewStatusSchema)
      .max(MAX_PREVIEW_RECORDS)
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
