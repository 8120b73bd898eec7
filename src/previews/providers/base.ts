// What the four clients share: the executor, the repository, the App's comment
// marker, who the token is, and keeping to one comment per pull request; and
// the small steps every client takes the same way (paging, a status's checks,
// a comment's id, the token user).
import { z } from 'zod';
import {
  type CommitStatus,
  type PreviewProvider,
  type PullRequest,
  previewCommentMarker,
  type RepositoryPermission,
} from '../pull-request.ts';
import { findOwnComment, markedBody, type PostedComment } from './comment.ts';
import { type CommentAction, failure, type HostFailure, type HostResult, type LabelAddition, ok } from './host.ts';
import { type Call, HttpExecutor, type HttpOptions, nextLink, type Reply } from './http.ts';
import { checkedStatus } from './status.ts';

/** The executor's options but the headers, which each client sets, and the repository, token and App. */
export interface HostOptions extends Omit<HttpOptions, 'auth' | 'headers' | 'cacheEntries'> {
  /** Checked by checkRepository. */
  repository: readonly string[];
  /** From the previews' token Secret; sent to apiUrl's origin only, never logged. */
  token: string;
  /** namespace/name of the parent App: its comment's marker. */
  appKey: string;
}

export const SHA = /^([0-9a-f]{40}|[0-9a-f]{64})$/;

/** Each item through its schema; one bad item fails the list (a partial list would close previews). */
export function parseShapes<S extends z.ZodType>(
  provider: PreviewProvider,
  items: readonly unknown[],
  schema: S,
): HostResult<z.output<S>[]> {
  const out: z.output<S>[] = [];
  for (const [i, item] of items.entries()) {
    const parsed = schema.safeParse(item);
    if (!parsed.success) {
      const path = parsed.error.issues[0]?.path.join('.') ?? '';
      const message = `${provider}: listing pull requests: item ${i} is not a pull request (${path || 'shape'})`;
      return failure('InvalidResponse', message);
    }
    out.push(parsed.data as z.output<S>);
  }
  return ok(out);
}

export function parseItems<S extends z.ZodType>(
  provider: PreviewProvider,
  items: readonly unknown[],
  schema: S,
  toPullRequest: (item: z.output<S>) => PullRequest,
): HostResult<PullRequest[]> {
  const shapes = parseShapes(provider, items, schema);
  return shapes.ok ? ok(shapes.value.map(toPullRequest)) : shapes;
}

/**
 * Each item through its schema, and what pick makes of it; an item that does not
 * parse (or that pick drops) is skipped: for histories and comments, where one
 * odd entry must not hide the others.
 */
export function eachParsed<S extends z.ZodType, T>(
  items: readonly unknown[],
  schema: S,
  pick: (item: z.output<S>) => T | undefined,
): T[] {
  return items.flatMap((raw) => {
    const parsed = schema.safeParse(raw);
    const picked = parsed.success ? pick(parsed.data as z.output<S>) : undefined;
    return picked === undefined ? [] : [picked];
  });
}

/** A provider's permission name as Teal's, none for a name it does not know. */
export function permissionNamed(
  names: Readonly<Record<string, RepositoryPermission>>,
  name: string,
): RepositoryPermission {
  return names[name] ?? 'none';
}

/** How a provider pages its lists: where a page's items are, and the next page's URL. */
export interface Paging {
  itemsOf(json: unknown): unknown[] | undefined;
  nextOf(reply: Reply): URL | undefined;
}

/** GitHub's, GitLab's and Gitea's: the page is a JSON array, the next one in the Link header. */
export const LINK_PAGING: Paging = {
  itemsOf: (json) => (Array.isArray(json) ? json : undefined),
  nextOf: (reply) => nextLink(reply.header('link'), reply.url),
};

/** A reply's JSON through a schema, or a bad-response failure naming the operation. */
export function parseReply<S extends z.ZodType>(provider: PreviewProvider, op: string, json: unknown, schema: S) {
  const parsed = schema.safeParse(json);
  if (parsed.success) return ok(parsed.data as z.output<S>);
  return failure('InvalidResponse', `${provider}: ${op}: not the documented shape`);
}

/** The provider-specific half of keeping one comment. */
export interface CommentCalls {
  list(number: number): Promise<HostResult<PostedComment[]>>;
  create(number: number, body: string): Promise<HostResult<string>>;
  edit(number: number, id: string, body: string): Promise<HostResult<void>>;
  /** Who the token is (login or account id), or undefined when the host will not say. */
  self(): Promise<HostResult<string | undefined>>;
}

export abstract class BaseHost {
  readonly provider: PreviewProvider;
  protected readonly http: HttpExecutor;
  protected readonly repo: readonly string[];
  private readonly marker: string;
  /** Teal's comment per pull request, as last written; found again by listing after a restart. */
  private readonly comments = new Map<number, { id: string; body: string }>();
  /** Upserts per pull request, one after the other: two at once would post two comments. */
  private readonly queue = new Map<number, Promise<unknown>>();
  private who: Promise<HostResult<string | undefined>> | undefined;

  private readonly paging: Paging;

  constructor(
    o: HostOptions,
    auth: readonly [string, string],
    headers: Record<string, string> = {},
    paging: Paging = LINK_PAGING,
  ) {
    this.provider = o.provider;
    this.repo = o.repository;
    this.marker = previewCommentMarker(o.provider, o.appKey);
    this.http = new HttpExecutor({ ...o, auth, headers });
    this.paging = paging;
  }

  notBefore(): number {
    return this.http.notBefore();
  }

  /** The repository's path segments, each encoded, joined by sep. */
  protected repoPath(sep = '/'): string {
    return this.repo.map(encodeURIComponent).join(sep);
  }

  protected send(call: Call) {
    return this.http.send(call);
  }

  /** Every page of a list, as this provider pages. */
  protected pages(call: Call): Promise<HostResult<unknown[]>> {
    return this.http.pages(call, this.paging.itemsOf, this.paging.nextOf);
  }

  /** A call whose answer says nothing Teal needs: done or failed. */
  protected async sendOnly(call: Call): Promise<HostResult<void>> {
    const reply = await this.send(call);
    return reply.ok ? ok(undefined) : reply;
  }

  /** A POST that creates something; its id, as every provider gives it ({"id": number}), as text. */
  protected async create(call: Omit<Call, 'method'>): Promise<HostResult<string>> {
    const reply = await this.send({ ...call, method: 'POST' });
    if (!reply.ok) return reply;
    const parsed = parseReply(this.provider, call.op, reply.value.json, z.object({ id: z.number() }));
    return parsed.ok ? ok(String(parsed.value.id)) : parsed;
  }

  /**
   * Who the token is: the field of GET user that names users on this host.
   * anonymous: the failures that mean a token which is no user (then undefined:
   * the marker alone finds the comment).
   */
  protected async tokenUser(
    field: string,
    anonymous: (failure: HostFailure) => boolean = () => false,
  ): Promise<HostResult<string | undefined>> {
    const op = 'reading the token user';
    const reply = await this.send({ op, path: 'user' });
    if (!reply.ok) return anonymous(reply.failure) ? ok(undefined) : reply;
    const parsed = parseReply(this.provider, op, reply.value.json, z.object({ [field]: z.string() }));
    return parsed.ok ? ok(parsed.value[field] as string) : parsed;
  }

  /** Only a full commit SHA gets a status (it goes into the path); the status checked as every provider sends it. */
  async setStatus(sha: string, status: CommitStatus): Promise<HostResult<void>> {
    if (!SHA.test(sha)) return failure('Rejected', `${this.provider}: setting a status: not a commit SHA`);
    return this.sendOnly({ op: 'setting a status', method: 'POST', ...this.statusCall(sha, checkedStatus(status)) });
  }

  /** The provider's status request: its path and body (and a refusal that means done). */
  protected abstract statusCall(sha: string, status: CheckedStatus): Pick<Call, 'path' | 'body' | 'alreadyDone'>;

  protected abstract commentCalls(): CommentCalls;

  upsertComment(number: number, body: string): Promise<HostResult<CommentAction>> {
    const before = this.queue.get(number)?.catch(() => undefined) ?? Promise.resolve();
    const run = before.then(() => this.upsertNow(number, body));
    const settled = run.finally(() => {
      if (this.queue.get(number) === settled) this.queue.delete(number);
    });
    this.queue.set(number, settled);
    return run;
  }

  private async upsertNow(number: number, text: string, lookAgain = true): Promise<HostResult<CommentAction>> {
    const calls = this.commentCalls();
    const body = markedBody(this.marker, text);
    const cached = this.comments.get(number);
    const known = cached ? ok(cached) : await this.findComment(calls, number);
    if (!known.ok) return known;
    const found = known.value;
    if (found?.body === body) return ok('unchanged');
    if (found) {
      const edited = await calls.edit(number, found.id, body);
      if (edited.ok) return this.kept(number, found.id, body, 'edited');
      // Deleted by someone since: look again, and post it anew only if it is really gone.
      this.comments.delete(number);
      if (edited.failure.status !== 404 || !lookAgain) return edited;
      return this.upsertNow(number, text, false);
    }
    const created = await calls.create(number, body);
    return created.ok ? this.kept(number, created.value, body, 'created') : created;
  }

  private async findComment(calls: CommentCalls, number: number) {
    const self = await this.self(calls);
    if (!self.ok) return self;
    const listed = await calls.list(number);
    if (!listed.ok) return listed;
    const own = findOwnComment(listed.value, this.marker, self.value);
    return ok(own ? { id: own.id, body: own.body } : undefined);
  }

  private kept(number: number, id: string, body: string, action: CommentAction): HostResult<CommentAction> {
    this.comments.set(number, { id, body });
    return ok(action);
  }

  /** Asked once; a host that refuses to say (a GitHub App's token) is remembered as unknown. */
  private async self(calls: CommentCalls): Promise<HostResult<string | undefined>> {
    this.who ??= calls.self();
    const who = await this.who;
    if (!who.ok) this.who = undefined;
    return who;
  }
}

export type CheckedStatus = ReturnType<typeof checkedStatus>;

/** A label put on or taken off, as each provider's history tells it, oldest first. */
export interface LabelEvent extends LabelAddition {
  added: boolean;
  label: string;
}

/** Who put the label on last, if its last event put it on (label names compare case-blind, as the hosts do). */
export function lastLabeler(events: readonly LabelEvent[], label: string): LabelAddition | undefined {
  const name = label.toLowerCase();
  const last = events.findLast((e) => e.label.toLowerCase() === name);
  return last?.added ? { by: last.by, at: last.at } : undefined;
}

/** A 404 to a permission-like question (no such user, or not a member) means none. */
export function noneWhenNotFound<T>(result: HostResult<T>, none: T): HostResult<T> {
  return !result.ok && result.failure.status === 404 ? ok(none) : result;
}
