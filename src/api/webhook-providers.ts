// What each git provider's push and pull-request webhooks look like: how they
// are signed, which headers name the event and the delivery, and where the
// payload keeps the repository URLs and the refs pushed. No I/O; the fastify
// plugin in webhooks.ts does the flow.
//
// The payload is only a hint: a push selects Apps by repository and ref, and
// Teal resolves the ref itself; a pull-request event selects the Apps whose
// previews follow the repository, and the previews planner lists the pull
// requests from the provider's API itself. So nothing here reads a commit SHA,
// a pull request's number or its state.
import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { z } from 'zod';
import { hmacSha256, safeEqual } from '../app/signature.ts';

export const PROVIDERS = ['github', 'gitlab', 'gitea', 'bitbucket', 'generic'] as const;
export type Provider = (typeof PROVIDERS)[number];

export function isProvider(value: string): value is Provider {
  return (PROVIDERS as readonly string[]).includes(value);
}

/**
 * push selects Apps by repository and ref; pull_request (any change to a pull
 * request) the Apps whose previews follow the repository; ping and other only
 * need to verify.
 */
export type EventKind = 'push' | 'pull_request' | 'ping' | 'other';

export interface ParsedDelivery {
  kind: EventKind;
  /** The event as the provider names it: "push", "Push Hook", "repo:refs_changed", ... */
  event: string;
  deliveryId: string | undefined;
  /** Every repository URL the payload gives (clone, ssh, web), as given, without duplicates. */
  repoUrls: string[];
  /** Full refs pushed, e.g. refs/heads/feature/login; empty unless kind is push (a pull request's refs are not read). */
  refs: string[];
}

/** A request that cannot be understood; its message is safe to send back. */
export class WebhookParseError extends Error {
  override readonly name = 'WebhookParseError';
}

export type BodyEncoding = 'json' | 'form';

// ---------------------------------------------------------------------------
// Signatures

/** Checks a secret against the request; built once per request from its signature header. */
export type Verifier = (secret: Buffer) => boolean;

const HEX_SHA256 = /^[0-9a-f]{64}$/i;

function hmacVerifier(value: string | undefined, prefix: string, body: Buffer): Verifier | undefined {
  if (value === undefined || !value.startsWith(prefix)) return undefined;
  const hex = value.slice(prefix.length);
  if (!HEX_SHA256.test(hex)) return undefined;
  const expected = Buffer.from(hex, 'hex');
  return (secret) => safeEqual(hmacSha256(secret, body), expected);
}

// GitLab sends the secret itself. Comparing digests keeps the compare constant
// time without telling the secret's length.
function tokenVerifier(value: string | undefined): Verifier | undefined {
  if (value === undefined || value === '') return undefined;
  const token = createHash('sha256').update(value, 'utf8').digest();
  return (secret) => safeEqual(createHash('sha256').update(secret).digest(), token);
}

/**
 * A verifier for this request's signature header, or undefined when the header
 * is missing or malformed (so no secret can verify it). The body must be the
 * exact bytes received.
 */
export function requestVerifier(provider: Provider, headers: IncomingHttpHeaders, body: Buffer): Verifier | undefined {
  switch (provider) {
    case 'github':
      // No fallback to the SHA-1 X-Hub-Signature.
      return hmacVerifier(header(headers, 'x-hub-signature-256'), 'sha256=', body);
    case 'bitbucket':
      return hmacVerifier(header(headers, 'x-hub-signature'), 'sha256=', body);
    case 'generic':
      return hmacVerifier(header(headers, 'x-signature'), 'sha256=', body);
    case 'gitea':
      return hmacVerifier(header(headers, 'x-gitea-signature'), '', body);
    case 'gitlab':
      return tokenVerifier(header(headers, 'x-gitlab-token'));
  }
}

/** One-shot check of a request against one secret. An empty secret never verifies. */
export function verifySignature(
  provider: Provider,
  headers: IncomingHttpHeaders,
  body: Buffer,
  secret: Buffer | string,
): boolean {
  const key = typeof secret === 'string' ? Buffer.from(secret, 'utf8') : secret;
  if (key.length === 0) return false;
  return requestVerifier(provider, headers, body)?.(key) ?? false;
}

// ---------------------------------------------------------------------------
// Payloads

// Fields are nullish and unknown keys are dropped: providers add fields over
// time and send null for some, and only these few are read.
const url = z.string().nullish();
const ref = z.string().nullish();

// Gitea copies GitHub's push payload; its repository has no git_url.
const githubPayload = z.object({
  ref,
  repository: z.object({ clone_url: url, ssh_url: url, html_url: url, git_url: url }).nullish(),
});

const gitlabPayload = z.object({
  event_name: z.string().nullish(),
  ref,
  project: z
    .object({ git_http_url: url, git_ssh_url: url, web_url: url, http_url: url, ssh_url: url, url, homepage: url })
    .nullish(),
  repository: z.object({ git_http_url: url, git_ssh_url: url, url, homepage: url }).nullish(),
});

const bitbucketPayload = z.object({
  repository: z
    .object({
      // Bitbucket Server lists clone links; Bitbucket Cloud's pull-request events give the web page only.
      links: z
        .object({ clone: z.array(z.object({ href: url })).nullish(), html: z.object({ href: url }).nullish() })
        .nullish(),
    })
    .nullish(),
  changes: z.array(z.object({ ref: z.object({ id: ref }).nullish(), refId: ref })).nullish(),
});

const genericPayload = z.object({ repository: url, ref });

interface Extracted {
  repoUrls: (string | null | undefined)[];
  refs: (string | null | undefined)[];
}

interface ProviderSpec {
  /** Header naming the event; the generic provider only sends pushes. */
  eventHeader: string | undefined;
  deliveryHeader: string;
  /** Where the URLs and refs are looked for, to say what is missing. */
  urlFields: string;
  refFields: string;
  classify(event: string, payload: unknown): EventKind;
  extract(payload: unknown): Extracted;
}

// Gitea names every change to a pull request (opened, synchronized, closed,
// labelled, ...) pull_request in X-Gitea-Event, as GitHub does in X-GitHub-Event.
const GITHUB_EVENTS: Readonly<Record<string, EventKind>> = { push: 'push', pull_request: 'pull_request', ping: 'ping' };

/** GitHub's events and payload, which Gitea copies under its own header names. */
function githubEvents(urlFields: string): Omit<ProviderSpec, 'eventHeader' | 'deliveryHeader'> {
  return {
    urlFields,
    refFields: 'ref',
    classify: (event) => GITHUB_EVENTS[event] ?? 'other',
    extract(payload) {
      const p = parse(githubPayload, payload);
      const r = p.repository;
      return { repoUrls: [r?.clone_url, r?.ssh_url, r?.html_url, r?.git_url], refs: [p.ref] };
    },
  };
}

const SPECS: Record<Provider, ProviderSpec> = {
  github: {
    eventHeader: 'x-github-event',
    deliveryHeader: 'x-github-delivery',
    ...githubEvents('repository.clone_url, ssh_url, html_url or git_url'),
  },
  gitea: {
    eventHeader: 'x-gitea-event',
    deliveryHeader: 'x-gitea-delivery',
    ...githubEvents('repository.clone_url, ssh_url or html_url'),
  },
  gitlab: {
    eventHeader: 'x-gitlab-event',
    deliveryHeader: 'x-gitlab-event-uuid',
    urlFields: 'project.git_http_url, project.git_ssh_url or repository.git_http_url',
    refFields: 'ref',
    classify(event, payload) {
      if (event === 'Push Hook' || event === 'Tag Push Hook') return 'push';
      if (event === 'Merge Request Hook') return 'pull_request';
      // System hooks carry pushes in the project hook's shape; the rest
      // (project_create, repository_update, ...) need nothing.
      if (event === 'System Hook') {
        const name = parse(gitlabPayload, payload).event_name;
        if (name === 'merge_request') return 'pull_request';
        return name === 'push' || name === 'tag_push' ? 'push' : 'other';
      }
      return 'other';
    },
    extract(payload) {
      const p = parse(gitlabPayload, payload);
      const { project: pr, repository: r } = p;
      return {
        repoUrls: [
          pr?.git_http_url,
          pr?.git_ssh_url,
          pr?.http_url,
          pr?.ssh_url,
          pr?.web_url,
          pr?.url,
          pr?.homepage,
          r?.git_http_url,
          r?.git_ssh_url,
          r?.url,
          r?.homepage,
        ],
        refs: [p.ref],
      };
    },
  },
  bitbucket: {
    eventHeader: 'x-event-key',
    deliveryHeader: 'x-request-id',
    urlFields: 'repository.links.clone[].href or repository.links.html.href',
    refFields: 'changes[].ref.id',
    classify(event) {
      if (event === 'repo:refs_changed') return 'push';
      // Bitbucket Cloud: pullrequest:created, :updated, :fulfilled, :rejected, ...
      if (event.startsWith('pullrequest:')) return 'pull_request';
      return event === 'diagnostics:ping' ? 'ping' : 'other';
    },
    extract(payload) {
      const p = parse(bitbucketPayload, payload);
      const links = p.repository?.links;
      return {
        repoUrls: [...(links?.clone ?? []).map((c) => c.href), links?.html?.href],
        refs: (p.changes ?? []).map((c) => c.ref?.id ?? c.refId),
      };
    },
  },
  generic: {
    eventHeader: undefined,
    deliveryHeader: 'x-delivery-id',
    urlFields: 'repository',
    refFields: 'ref',
    classify: () => 'push',
    extract(payload) {
      const p = parse(genericPayload, payload);
      return { repoUrls: [p.repository], refs: [p.ref] };
    },
  },
};

const MAX_DELIVERY_ID = 256;
const MAX_URL = 2048;

/**
 * Reads the event, the delivery ID, the repository URLs and the refs pushed
 * (a pull-request event: the repository URLs only).
 * `body` is the raw request body; for GitHub's form encoding the JSON is in
 * its `payload` field. Throws WebhookParseError for anything malformed.
 */
export function parseDelivery(
  provider: Provider,
  headers: IncomingHttpHeaders,
  body: Buffer,
  encoding: BodyEncoding,
): ParsedDelivery {
  const spec = SPECS[provider];
  const payload = decodeBody(provider, body, encoding);

  let event = 'push';
  if (spec.eventHeader !== undefined) {
    const value = header(headers, spec.eventHeader);
    if (value === undefined || value === '') throw new WebhookParseError(`missing ${spec.eventHeader} header`);
    event = value;
  }

  const deliveryId = header(headers, spec.deliveryHeader)?.trim() || undefined;
  if (deliveryId !== undefined && deliveryId.length > MAX_DELIVERY_ID) {
    throw new WebhookParseError(`${spec.deliveryHeader} header is longer than ${MAX_DELIVERY_ID} characters`);
  }

  const kind = spec.classify(event, payload);
  const extracted = spec.extract(payload);
  const repoUrls = unique(extracted.repoUrls).filter((u) => u.length <= MAX_URL);
  if (kind !== 'push' && kind !== 'pull_request') return { kind, event, deliveryId, repoUrls, refs: [] };
  if (repoUrls.length === 0) throw new WebhookParseError(`payload names no repository URL (${spec.urlFields})`);
  if (kind === 'pull_request') return { kind, event, deliveryId, repoUrls, refs: [] };

  const refs = unique(extracted.refs);
  if (refs.length === 0) throw new WebhookParseError(`payload names no ref (${spec.refFields})`);
  for (const r of refs) {
    if (!isFullRef(r)) throw new WebhookParseError(`payload ref is not a valid full ref such as refs/heads/main`);
  }
  return { kind, event, deliveryId, repoUrls, refs };
}

function decodeBody(provider: Provider, body: Buffer, encoding: BodyEncoding): unknown {
  let text: string;
  if (encoding === 'form') {
    // GitHub's "application/x-www-form-urlencoded" content type; the others only send JSON.
    if (provider !== 'github') throw new WebhookParseError('only GitHub may send a form-encoded body');
    const field = new URLSearchParams(body.toString('utf8')).get('payload');
    if (field === null) throw new WebhookParseError('form body has no payload field');
    text = field;
  } else {
    text = body.toString('utf8');
  }
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch {
    throw new WebhookParseError('body is not valid JSON');
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    throw new WebhookParseError('payload must be a JSON object');
  }
  return payload;
}

function parse<T>(schema: z.ZodType<T>, payload: unknown): T {
  const result = schema.safeParse(payload);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const where = issue && issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
  throw new WebhookParseError(`invalid payload: ${where}${issue?.message ?? 'unexpected shape'}`);
}

/**
 * A full ref that `git check-ref-format` would accept: under refs/, no empty,
 * dot-led or .lock components, no control characters, spaces or ~^:?*[\,
 * no "..", no "@{". Branch names may contain slashes.
 */
export function isFullRef(value: string): boolean {
  if (!value.startsWith('refs/') || value.length > 1024) return false;
  if (/[\x00-\x20\x7f~^:?*[\\]/.test(value) || value.includes('..') || value.includes('@{')) return false;
  if (value.endsWith('.')) return false;
  return value.split('/').every((part) => part.length > 0 && !part.startsWith('.') && !part.endsWith('.lock'));
}

/** A header's value; a repeated header is ambiguous and counts as absent. */
function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return typeof value === 'string' ? value : undefined;
}

function unique(values: (string | null | undefined)[]): string[] {
  const out: string[] = [];
  for (const v of values) {
    if (typeof v === 'string' && v !== '' && !out.includes(v)) out.push(v);
  }
  return out;
}
