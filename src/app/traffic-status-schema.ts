// The durable state of the traffic check in App status (traffic-schema.ts has the
// check itself). A module of its own so that a reader of status builds the
// status schemas without the spec's (src/app/status-reader.ts).
import { z } from 'zod';
import { MAX_MESSAGE_LENGTH, MAX_VALUE_LENGTH } from './analysis-status-schema.ts';

export const TRAFFIC_CHECK_PHASES = ['Running', 'Successful', 'Failed'] as const;

const time = z.string().describe('RFC 3339 time, to the millisecond: the planner wakes at exact deadlines.');

export const TrafficCheckStatusSchema = z
  .strictObject({
    podTemplateHash: z.string().max(63).describe('The revision the check waits to see.'),
    revision: z.int().min(1),
    phase: z.enum(TRAFFIC_CHECK_PHASES),
    message: z.string().max(1024).optional(),
    startedAt: time,
    finishedAt: time.optional(),
    taken: z.int().min(0).describe('Requests started, so the next one is taken + 1.'),
    consecutive: z.int().min(0).describe('Answers in a row that named the new revision, so far.'),
    lastSeen: z
      .string()
      .max(MAX_VALUE_LENGTH)
      .optional()
      .describe('The revision the latest answer named; secrets masked.'),
    lastError: z.string().max(MAX_MESSAGE_LENGTH).optional().describe('Why the latest request had no answer.'),
    lastAt: time.optional().describe('When the latest request ended.'),
    inFlight: z
      .strictObject({ n: z.int().min(1), startedAt: time })
      .optional()
      .describe('The request under way, recorded before it is sent: a restart sends it again.'),
  })
  .describe('The traffic check of the latest switch (spec.strategy.blueGreen.switch.trafficCheck).');

export type TrafficCheckStatus = z.output<typeof TrafficCheckStatusSchema>;
