// The durable state of a run of checks in App status (analysis-schema.ts has the
// checks themselves). A module of its own so that a reader of status (the CLI's
// `get`, src/app/status-reader.ts) builds the status schemas without the spec's.
import { z } from 'zod';

/** Checks in one run, counting templates and inline ones: status holds a result for each. */
export const MAX_CHECKS = 20;
/** Measurements kept per check in status (Argo's DefaultMeasurementHistoryLimit); counters keep the totals. */
export const MEASUREMENT_HISTORY_LIMIT = 10;
export const MAX_VALUE_LENGTH = 128;
export const MAX_MESSAGE_LENGTH = 256;

/** A list the CRD merges by key (server-side apply). */
export const listMap = (key: string) => ({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': [key] });

// ---- the durable run state, in App status ----

export const MEASUREMENT_PHASES = ['Running', 'Successful', 'Failed', 'Inconclusive', 'Error'] as const;
/** A check ends Cancelled when its run ends (cancelled, or decided by another check) before its own verdict. */
export const CHECK_PHASES = [
  'Pending',
  'Running',
  'Successful',
  'Failed',
  'Inconclusive',
  'Error',
  'Cancelled',
] as const;
export const RUN_PHASES = ['Running', 'Successful', 'Failed', 'Inconclusive', 'Error', 'Cancelled'] as const;

const time = z.string().describe('RFC 3339 time, to the millisecond: the planner wakes at exact deadlines.');

export const MeasurementStatusSchema = z.strictObject({
  n: z
    .int()
    .min(1)
    .describe("The measurement's ordinal in its check: with the run id and check name, its identity (and Job name)."),
  phase: z.enum(MEASUREMENT_PHASES).describe('Running from the moment it is started, before any request is made.'),
  value: z.string().max(MAX_VALUE_LENGTH).optional().describe('The measured value, shortened; secrets redacted.'),
  message: z.string().max(MAX_MESSAGE_LENGTH).optional(),
  startedAt: time,
  finishedAt: time.optional(),
});

export const PROVIDERS = ['job', 'web', 'prometheus'] as const;

export const CheckStatusSchema = z.strictObject({
  name: z.string(),
  provider: z.enum(PROVIDERS).optional().describe('Where its measurements come from.'),
  phase: z.enum(CHECK_PHASES),
  message: z
    .string()
    .max(MAX_MESSAGE_LENGTH)
    .optional()
    .describe('Which limit decided the check, or why it ended with its run.'),
  taken: z.int().min(0).describe('Measurements started, so the next one is taken + 1.'),
  count: z.int().min(0).describe('Measurements that ended without Error.'),
  successful: z.int().min(0),
  failed: z.int().min(0),
  inconclusive: z.int().min(0),
  error: z.int().min(0),
  consecutiveError: z.int().min(0),
  measurements: z.array(MeasurementStatusSchema).max(MEASUREMENT_HISTORY_LIMIT).describe('The latest measurements.'),
});

export const AnalysisRunStatusSchema = z
  .strictObject({
    id: z.string().max(63).describe('Names the run: its Jobs and measurement keys start with it.'),
    phase: z.enum(RUN_PHASES),
    message: z.string().max(1024).optional(),
    startedAt: time,
    finishedAt: time.optional(),
    checks: z.array(CheckStatusSchema).max(MAX_CHECKS).meta(listMap('name')),
  })
  .describe('One run of the checks, with every measurement durable: a restart resumes it.');

export type MeasurementPhase = (typeof MEASUREMENT_PHASES)[number];
export type CheckPhase = (typeof CHECK_PHASES)[number];
export type RunPhase = (typeof RUN_PHASES)[number];
export type Provider = (typeof PROVIDERS)[number];
export type MeasurementStatus = z.output<typeof MeasurementStatusSchema>;
export type CheckStatus = z.output<typeof CheckStatusSchema>;
export type AnalysisRunStatus = z.output<typeof AnalysisRunStatusSchema>;
