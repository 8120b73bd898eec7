// The traffic check (issue #26 item 2.4): a web request to the URL users reach,
// repeated after a switch until the new revision has answered so many times in
// a row; and its durable state in App status. Like analysis-schema.ts, this zod
// schema is the single source of truth for its types, defaults, validation and
// the CRD. It sits in spec.strategy.blueGreen.switch.trafficCheck.
import { z } from 'zod';
import { AppArgumentSchema, args, HEADER_NAME, headers, httpUrl, MIN_INTERVAL_MS } from './analysis-schema.ts';
import { DURATION_HINT, DURATION_PATTERN, parseDuration } from './duration.ts';
import { JSON_PATH_PATTERN } from './patterns.ts';
import { withRules } from './rules.ts';

export {
  TRAFFIC_CHECK_PHASES,
  type TrafficCheckStatus,
  TrafficCheckStatusSchema,
} from './traffic-status-schema.ts';

/** The environment variable spec.revisionEnv puts in every container: the revision's pod-template hash. */
export const REVISION_ENV = 'TEAL_REVISION';

const interval = withRules(
  z.string().max(32).regex(DURATION_PATTERN, `trafficCheck.interval must be ${DURATION_HINT}`),
  [
    {
      cel: `!self.matches(${JSON.stringify(DURATION_PATTERN.source)}) || duration(self) >= duration('${MIN_INTERVAL_MS / 1000}s')`,
      message: `trafficCheck.interval must be at least ${MIN_INTERVAL_MS / 1000}s: each request is a status write`,
      test: (text) => !DURATION_PATTERN.test(text) || parseDuration(text) >= MIN_INTERVAL_MS,
    },
  ],
);

export const TrafficCheckSchema = z
  .strictObject({
    url: httpUrl('trafficCheck.url').describe(
      'The URL users reach: an Ingress, gateway or load balancer address, or the active Service. Asked with GET, no redirects followed, through the operator egress rules (--egress-allow). May hold {{args.<name>}}.',
    ),
    headers,
    args: args(AppArgumentSchema).describe(
      'Values for {{args.<name>}} in url and headers; one read from a Secret is never shown in status, events or logs.',
    ),
    revisionHeader: z
      .string()
      .min(1)
      .max(256)
      .regex(HEADER_NAME, 'trafficCheck.revisionHeader must be an HTTP header name')
      .optional()
      .describe('A response header that names the revision that answered, such as X-Revision.'),
    jsonPath: z
      .string()
      .max(256)
      .regex(JSON_PATH_PATTERN, 'trafficCheck.jsonPath must be a path such as {$.revision}')
      .optional()
      .describe(
        'Where the JSON answer names the revision, such as {$.revision}. With neither this nor revisionHeader, the whole body (trimmed) is the revision. With both, both must name the new one.',
      ),
    consecutiveSuccessLimit: z
      .int()
      .min(1)
      .max(1000)
      .default(10)
      .describe(
        'Answers in a row from the new revision before the switch counts as done (Argo Rollouts: the same field of a metric). An answer from another revision, or an error, starts the count again. Default: 10.',
      ),
    interval: interval.default('1s').describe('Time between two requests, at least 1s. Default: 1s.'),
    timeoutSeconds: z
      .int()
      .min(1)
      .max(60)
      .default(10)
      .describe('Deadline of one request; past it the answer counts as an error. Default: 10 (as a web check).'),
  })
  .describe(
    `After the switch, asks url until ${'`consecutiveSuccessLimit`'} answers in a row name the new revision: its pod-template hash (what ${REVISION_ENV} holds, with spec.revisionEnv) or its revision number. Until then the switch is not verified and the old revision stays up.`,
  );

export type TrafficCheck = z.output<typeof TrafficCheckSchema>;
export type TrafficCheckInput = z.input<typeof TrafficCheckSchema>;
