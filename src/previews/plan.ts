// Previews as a pure planner (issue #28): plan(parent App, observed) -> the child
// Apps to make, change and delete, their Ingresses or HTTPRoutes, what to write
// back on each pull request, the parent's status.previews and PreviewsListed
// condition, and the exact time of the next round. Level-triggered: the desired
// set is the open pull requests of the latest listing, so a missed webhook only
// delays; a child whose pull request is gone is deleted on the next listing.
// A provider error changes nothing (no child deleted, no report written).
//
// plan() reads as named steps, as rollout/bluegreen.ts does; each rule is a named
// predicate (select.ts, lifecycle.ts) and every reason a constant (reasons.ts).
import type { ValueProblem } from '../app/cluster-values.ts';
import type { ConditionInput } from '../app/conditions.ts';
import { parseDuration } from '../app/duration.ts';
import { sha } from '../app/hash.ts';
import { ANN_APPLIED } from '../app/labels.ts';
import { ANN_PREVIEW_SPEC, LABEL_PULL_REQUEST } from '../app/preview-labels.ts';
import { previewsProblems } from '../app/previews-problems.ts';
import type { PreviewStatus, Previews, PreviewsStatus } from '../app/previews-schema.ts';
import { MAX_RECORDED_MESSAGE, MAX_RECORDED_TITLE, MAX_TEXT_BYTES } from '../app/previews-status-schema.ts';
import { safeWebUrl } from '../app/previews-view.ts';
import type { App } from '../app/schema.ts';
import { storedBytes, textBytes } from '../app/stored-bytes.ts';
import { type BuildDefaults, imageRepository, pushSecretName } from '../build/registry.ts';
import { approvalRecord, pinApprovals } from './approvals.ts';
import { type ChildApp, childApp } from './child.ts';
import { type ExposureManifest, exposureManifest, type ObservedExposure, previewHost, previewUrl } from './exposure.ts';
import { type Candidate, childHead, type Lifecycle, lifecycle } from './lifecycle.ts';
import { previewName } from './names.ts';
import { nextPoll, type Poll } from './poll.ts';
import {
  COMMIT_STATUS_CONTEXT,
  type CommitStatus,
  type PullRequest,
  type PullRequestApproval,
  type PullRequestListing,
} from './pull-request.ts';
import { ListedReason, PreviewReason, type PreviewReasonValue } from './reasons.ts';
import { recorded, withinCapacity } from './records.ts';
import {
  commentBody,
  commitStatus,
  type ReportContext,
  recordedLine,
  releaseState,
  type StateView,
  shownState,
  withoutCredentials,
} from './report.ts';
import { select, type Verdict } from './select.ts';

/** At most one edit of a pull request's comment per this long (issue #28 item 6). */
export const COMMENT_EDIT_INTERVAL_MS = 10_000;

export type PreviewAction =
  | { kind: 'createChild'; number: number; manifest: ChildApp; why: PreviewReasonValue }
  | { kind: 'updateChild'; number: number; manifest: ChildApp; why: PreviewReasonValue }
  | { kind: 'deleteChild'; number: number; name: string; uid: string; why: PreviewReasonValue }
  | { kind: 'applyExposure'; number: number; manifest: ExposureManifest }
  | { kind: 'setCommitStatus'; number: number; sha: string; context: string; status: CommitStatus }
  /** Create or edit the one comment (found by PREVIEW_COMMENT_MARKER); record hash and time once written. */
  | { kind: 'editComment'; number: number; body: string; hash: string }
  | { kind: 'removeLabel'; number: number; label: string; why: PreviewReasonValue };

/** The actions on the cluster (the executor's) and those on the provider (the previews runner's). */
export type PreviewClusterAction = Extract<
  PreviewAction,
  { kind: 'createChild' | 'updateChild' | 'deleteChild' | 'applyExposure' }
>;
export type PreviewProviderAction = Exclude<PreviewAction, PreviewClusterAction>;
export const isProviderAction = (a: PreviewAction): a is PreviewProviderAction =>
  a.kind === 'setCommitStatus' || a.kind === 'editComment' || a.kind === 'removeLabel';

export interface PreviewsPlanInput {
  /** The parent App, validated. */
  app: App;
  /** The latest listing of the provider, or why it failed. */
  listing: PullRequestListing;
  /** When that listing was read (or tried). */
  listedAt: Date;
  /** The Apps labelled teal.dev/preview-of=<parent>, validated; only those the parent owns count. */
  children: readonly App[];
  /** The Ingresses or HTTPRoutes labelled so. */
  exposures?: readonly ObservedExposure[];
  now: Date;
  buildDefaults?: BuildDefaults;
}

export interface PreviewsPlan {
  actions: PreviewAction[];
  /** The parent's next status.previews; undefined to remove it (no spec.previews). */
  status: PreviewsStatus | undefined;
  /** The parent's PreviewsListed condition; undefined to remove it. */
  condition: ConditionInput | undefined;
  /** When the pull requests are to be listed next: at once when a webhook asked since the listing (poll.ts). */
  pollAt?: string;
  /** A request annotation Teal ignored (not a time, or in the future), for a Warning Event. */
  problems?: ValueProblem[];
  /** The next deadline of any kind (pollAt included), and how long until it. */
  wakeAt?: string;
  requeueAfterMs?: number;
}

/** The planner's state through its steps. */
interface Round {
  input: PreviewsPlanInput;
  parent: App;
  previews: Previews;
  nowMs: number;
  actions: PreviewAction[];
  deadlines: number[];
  /** Messages of pull requests skipped or not exposed. */
  skipped: string[];
  prior: Map<number, PreviewStatus>;
  children: Map<number, App>;
  /** The listing's approvals, each at the commit its record pinned it to (approvals.ts). */
  approvals: PullRequestApproval[];
}

export function plan(input: PreviewsPlanInput): PreviewsPlan {
  const { app, now } = input;
  const previews = app.spec.previews;
  if (!previews) return planWithout(app, input.children);
  const problems = specProblems(input, previews);
  if (problems.length > 0)
    return planUnchanged(app, { reason: ListedReason.InvalidSpec, message: problems.join('; ') });
  if (!input.listing.ok) return planProviderError(input, previews, input.listing.error);
  const prior = new Map((app.status?.previews?.pullRequests ?? []).map((p) => [p.number, p]));
  const r: Round = {
    input,
    parent: app,
    previews,
    nowMs: now.getTime(),
    actions: [],
    deadlines: [],
    skipped: [],
    prior,
    children: ownedChildren(app, input.children),
    approvals: pinApprovals(input.listing.approvals, prior),
  };
  const selection = select(input.listing.pullRequests, r.approvals, previews);
  const { unread } = selection;
  const expiredHead = (number: number) => r.prior.get(number)?.expired;
  const { verdicts, skipped } = withinCapacity(selection.verdicts, r.children, unread, expiredHead);
  r.skipped.push(...(skipped ? [skipped] : []), ...selection.skipped);
  const lc = lifecycle(candidates(r, verdicts), previews, r.nowMs);
  r.deadlines.push(...lc.deadlines);
  reconcileChildren(r, lc);
  deleteChildren(r, verdicts, lc, unread);
  const entries = report(r, verdicts, lc);
  removeStaleApprovals(r, verdicts);
  return finish(r, entries);
}

// ---- the ends ----

/** When the pull requests are listed next: one interval after the last listing, or sooner on a webhook's request. */
function nextListing(input: PreviewsPlanInput, previews: Previews, retryAtMs?: number): Poll {
  const { metadata } = input.app;
  return nextPoll({
    annotations: metadata.annotations,
    object: `App ${metadata.namespace}/${metadata.name}`,
    listedAtMs: input.listedAt.getTime(),
    intervalMs: parseDuration(previews.interval),
    retryAtMs,
    nowMs: input.now.getTime(),
  });
}

/** The request annotation's problems, when there are any. */
const problemsOf = (poll: Poll) => (poll.problems.length > 0 ? { problems: poll.problems } : {});

/** What spec.previews cannot be planned with, as InvalidSpec names it. */
function specProblems(input: PreviewsPlanInput, previews: Previews): string[] {
  const { app, buildDefaults } = input;
  const production = { image: imageRepository(app, buildDefaults), pushSecret: pushSecretName(app, buildDefaults) };
  return previewsProblems({ ...app.spec, previews }, production);
}

/** spec.previews removed: every preview goes, and the record with them. */
function planWithout(app: App, children: readonly App[]): PreviewsPlan {
  const actions: PreviewAction[] = [...ownedChildren(app, children)].map(([number, child]) =>
    deleteAction(number, child, PreviewReason.PreviewsOff),
  );
  return { actions, status: undefined, condition: undefined };
}

/** Nothing to do but say why: no child is touched and no report written. */
function planUnchanged(app: App, condition: Omit<ConditionInput, 'type' | 'status'>, pollAt?: number): PreviewsPlan {
  const at = pollAt !== undefined ? new Date(pollAt).toISOString() : undefined;
  return {
    actions: [],
    status: app.status?.previews,
    condition: { type: 'PreviewsListed', status: 'False', ...condition },
    ...(at ? { pollAt: at, wakeAt: at } : {}),
  };
}

/** The provider failed: a condition with its (credential-free) message, the next try at its retry time or the interval. */
function planProviderError(
  input: PreviewsPlanInput,
  previews: Previews,
  error: { reason: string; message: string; retryAt?: string },
): PreviewsPlan {
  const retry = error.retryAt !== undefined ? Date.parse(error.retryAt) : undefined;
  const poll = nextListing(input, previews, retry);
  const condition = { reason: error.reason, message: withoutCredentials(error.message) };
  const plan = planUnchanged(input.app, condition, poll.atMs);
  return { ...plan, ...problemsOf(poll), requeueAfterMs: Math.max(0, poll.atMs - input.now.getTime()) };
}

/** The plan: its actions, the next status and condition, and the earliest deadline (the next listing at the latest). */
function finish(r: Round, entries: PreviewStatus[]): PreviewsPlan {
  const { listedAt } = r.input;
  const poll = nextListing(r.input, r.previews);
  const next = Math.min(poll.atMs, ...r.deadlines.filter(Number.isFinite));
  const condition: ConditionInput =
    r.skipped.length > 0
      ? {
          type: 'PreviewsListed',
          status: 'True',
          reason: ListedReason.Skipped,
          message: r.skipped.join('; ').slice(0, 1024),
        }
      : { type: 'PreviewsListed', status: 'True', reason: ListedReason.Listed };
  return {
    actions: r.actions,
    status: { listedAt: listedAt.toISOString(), pullRequests: entries },
    condition,
    pollAt: new Date(poll.atMs).toISOString(),
    ...problemsOf(poll),
    wakeAt: new Date(next).toISOString(),
    requeueAfterMs: Math.max(0, next - r.nowMs),
  };
}

// ---- the steps ----

/** The parent's children by number: only those it owns (another's App of the same label is none of its business). */
export function ownedChildren(parent: App, children: readonly App[]): Map<number, App> {
  const owned = new Map<number, App>();
  for (const child of children) {
    const number = Number(child.metadata.labels?.[LABEL_PULL_REQUEST]);
    const ours = ownerUids(child).includes(parent.metadata.uid ?? '');
    if (ours && Number.isSafeInteger(number) && number > 0 && !child.metadata.deletionTimestamp)
      owned.set(number, child);
  }
  return owned;
}

/** The uids of the Apps that own an App (its metadata is loose: ownerReferences is read with care). */
function ownerUids(app: App): string[] {
  const refs = (app.metadata as { ownerReferences?: unknown }).ownerReferences;
  if (!Array.isArray(refs)) return [];
  return refs.flatMap((o: { kind?: unknown; uid?: unknown }) =>
    o?.kind === 'App' && typeof o.uid === 'string' && o.uid !== '' ? [o.uid] : [],
  );
}

/**
 * The pull requests that may have a preview, and of which commit: the head;
 * for a fork awaiting approval of a new head, the commit its preview already
 * runs (approved before), never the new one.
 */
function candidates(r: Round, verdicts: readonly Verdict[]): Candidate[] {
  return verdicts.flatMap((v): Candidate[] => {
    const child = r.children.get(v.pr.number);
    const expired = r.prior.get(v.pr.number)?.expired;
    if (v.kind === 'preview') return [{ pr: v.pr, head: v.pr.headSha, child, expired }];
    const approvedHead = childHead(child);
    if (v.kind === 'awaitingApproval' && child && approvedHead) return [{ pr: v.pr, head: approvedHead, child }];
    return [];
  });
}

/** Why a child changes: a new commit, sleep, wake, or the parent's spec. */
function whyChanged(child: App, manifest: ChildApp, lc: Lifecycle, number: number): PreviewReasonValue {
  if (childHead(child) !== manifest.spec.source?.git.ref) return PreviewReason.NewCommit;
  const asleep = lc.asleep.get(number);
  if (asleep && child.spec.replicas > 0) return asleep;
  if (lc.woken.has(number) || (child.spec.replicas === 0 && manifest.spec.replicas > 0)) return PreviewReason.Woken;
  return PreviewReason.SpecChanged;
}

/** Why a child is made: a new pull request, an approval, or a new commit after its preview expired. */
function whyMade(prior: PreviewStatus | undefined): PreviewReasonValue {
  if (!prior) return PreviewReason.Opened;
  return prior.state === 'AwaitingApproval' ? PreviewReason.Approved : PreviewReason.NewCommit;
}

/** Each wanted preview's child App, made or written again when what it should say changed. */
function reconcileChildren(r: Round, lc: Lifecycle): void {
  for (const wanted of lc.wanted) {
    const number = wanted.pr.number;
    const manifest = childApp(r.parent, r.previews, wanted);
    const child = r.children.get(number);
    if (!child) {
      const why = whyMade(r.prior.get(number));
      r.actions.push({ kind: 'createChild', number, manifest, why });
    } else if (child.metadata.annotations?.[ANN_PREVIEW_SPEC] !== manifest.metadata.annotations[ANN_PREVIEW_SPEC]) {
      r.actions.push({ kind: 'updateChild', number, manifest, why: whyChanged(child, manifest, lc, number) });
    }
    if (child) expose(r, number, child);
  }
}

const deleteAction = (number: number, child: App, why: PreviewReasonValue): PreviewAction => ({
  kind: 'deleteChild',
  number,
  name: child.metadata.name,
  uid: child.metadata.uid ?? '',
  why,
});

/** Children of pull requests closed, merged, no longer matching, ignored or expired; unreadable ones are left. */
function deleteChildren(r: Round, verdicts: readonly Verdict[], lc: Lifecycle, unread: ReadonlySet<number>): void {
  const byNumber = new Map(verdicts.map((v) => [v.pr.number, v]));
  const expired = new Set(lc.expired.map((c) => c.pr.number));
  for (const [number, child] of r.children) {
    const verdict = byNumber.get(number);
    if (unread.has(number)) continue;
    if (!verdict) r.actions.push(deleteAction(number, child, PreviewReason.Closed));
    else if (verdict.kind === 'none') r.actions.push(deleteAction(number, child, verdict.why));
    else if (expired.has(number)) r.actions.push(deleteAction(number, child, PreviewReason.Expired));
  }
}

/** The child's Ingress or HTTPRoute, once the child exists to own it. */
function expose(r: Round, number: number, child: App): void {
  const exposure = r.previews.exposure;
  if (!exposure || !child.metadata.uid) return;
  const host = previewHost(exposure, { number, app: r.parent.metadata.name, name: child.metadata.name });
  if ('problem' in host) {
    r.skipped.push(host.problem);
    return;
  }
  const manifest = exposureManifest(exposure, host.host, child);
  const seen = r.input.exposures?.find((e) => e.kind === manifest.kind && e.name === manifest.metadata.name);
  if (seen?.applied !== manifest.metadata.annotations[ANN_APPLIED]) {
    r.actions.push({ kind: 'applyExposure', number, manifest });
  }
}

// ---- what each pull request is told ----

/** Where one pull request's preview stands this round. */
function viewOf(r: Round, verdict: Verdict, lc: Lifecycle): StateView {
  const number = verdict.pr.number;
  if (verdict.kind === 'awaitingApproval') return { state: 'AwaitingApproval' };
  if (lc.expired.some((c) => c.pr.number === number)) return { state: 'Expired' };
  const child = r.children.get(number);
  // A child made this round, or moved to a new commit, has not started on it.
  if (!child || childHead(child) !== verdict.pr.headSha) return { state: 'Building' };
  return releaseState(child, verdict.pr.headSha);
}

/** A URL short enough to record (a host is at most 253 characters: always, for a preview's). */
const recordable = (url: string | undefined) =>
  url !== undefined && textBytes(url) <= MAX_TEXT_BYTES ? url : undefined;

/** The preview's URL, while it has a host. */
function urlOf(r: Round, number: number): string | undefined {
  const exposure = r.previews.exposure;
  if (!exposure) return undefined;
  const name = previewName(r.parent.metadata.name, number);
  const host = previewHost(exposure, { number, app: r.parent.metadata.name, name });
  return 'host' in host ? recordable(previewUrl(exposure, host.host)) : undefined;
}

/** The commit status was last written so, for this commit. */
const sameStatus = (a: CommitStatus, b: PreviewStatus['reported'], head: string) =>
  b?.status?.sha === head &&
  b.status.state === a.state &&
  b.status.description === a.description &&
  b.status.targetUrl === a.targetUrl;

/** What one pull request is to be told this round: its writes, and when a comment edit may be made if not now. */
interface Reports {
  status?: Extract<PreviewAction, { kind: 'setCommitStatus' }>;
  comment?: Extract<PreviewAction, { kind: 'editComment' }>;
  commentAt?: number;
}

/** The commit status, when it says something the pull request was not last told of this commit. */
function statusReport(r: Round, pr: PullRequest, context: ReportContext, prior: PreviewStatus | undefined): Reports {
  if (!r.previews.report.commitStatus) return {};
  const status = commitStatus(context);
  if (!status || sameStatus(status, prior?.reported, pr.headSha)) return {};
  return {
    status: { kind: 'setCommitStatus', number: pr.number, sha: pr.headSha, context: COMMIT_STATUS_CONTEXT, status },
  };
}

/** The comment, when its body changed: at most one edit per COMMENT_EDIT_INTERVAL_MS, else at the exact time it may be. */
function commentReport(r: Round, body: string, number: number, prior: PreviewStatus | undefined): Reports {
  if (!r.previews.report.comment) return {};
  const hash = sha(body).slice(0, 16);
  const last = prior?.reported?.comment;
  if (last?.hash === hash) return {};
  const allowedAt = last ? Date.parse(last.at) + COMMENT_EDIT_INTERVAL_MS : Number.NaN;
  if (Number.isFinite(allowedAt) && r.nowMs < allowedAt) return { commentAt: allowedAt };
  return { comment: { kind: 'editComment', number, body, hash } };
}

/**
 * The record's `reported` once this round's writes are accepted (a deferred comment
 * edit counted as made): the size status keeps room for, so that a record does not
 * outgrow the budget when its writes land, drop out, lose what it was told, and
 * have it written again.
 */
function eventually(r: Round, prior: PreviewStatus | undefined, reports: Reports): PreviewStatus['reported'] {
  const at = new Date(r.nowMs).toISOString();
  const { status, comment } = reports;
  const wrote = status ? { status: { sha: status.sha, ...status.status, at } } : {};
  const hash = comment?.hash ?? (reports.commentAt !== undefined ? prior?.reported?.comment?.hash : undefined);
  const edited = hash !== undefined ? { comment: { hash, at } } : {};
  const reported = { ...prior?.reported, ...wrote, ...edited };
  return Object.keys(reported).length > 0 ? reported : undefined;
}

/** The pull request has a child App after this round (or keeps one at an approved commit). */
const hasChild = (r: Round, lc: Lifecycle, number: number, view: StateView) =>
  view.state !== 'Expired' && (r.children.has(number) || lc.wanted.some((w) => w.pr.number === number));

/** What the reports of one pull request are about this round. */
function contextOf(r: Round, verdict: Exclude<Verdict, { kind: 'none' }>, lc: Lifecycle): ReportContext {
  const number = verdict.pr.number;
  const view = viewOf(r, verdict, lc);
  return {
    view,
    asleep: lc.asleep.has(number),
    head: verdict.pr.headSha,
    url: hasChild(r, lc, number, view) ? urlOf(r, number) : undefined,
    approvalLabel: r.previews.forks.approvalLabel,
  };
}

/** The pull request's entry in status.previews; `name` while it has (or gets) a child App. */
function statusEntry(
  pr: PullRequest,
  context: ReportContext,
  name: string | undefined,
  prior: PreviewStatus | undefined,
  approval: PreviewStatus['approval'],
) {
  const { view, url } = context;
  // An expired preview's head is the pull request's: a preview of an older commit is not idle (activity is a new commit).
  const expired = view.state === 'Expired' ? context.head : undefined;
  const webUrl = recordable(safeWebUrl(pr.webUrl));
  const entry: PreviewStatus = {
    number: pr.number,
    // What people see of the pull request beside its preview (kubectl teal previews -o, the dashboard), as text.
    ...(typeof pr.title === 'string' && pr.title.trim() !== ''
      ? { title: recordedLine(pr.title, MAX_RECORDED_TITLE) }
      : {}),
    ...(webUrl ? { webUrl } : {}),
    ...(name ? { name } : {}),
    head: pr.headSha,
    state: shownState(context),
    ...(url ? { url } : {}),
    ...(view.message ? { message: recordedLine(view.message, MAX_RECORDED_MESSAGE) } : {}),
    ...(expired ? { expired } : {}),
    ...(prior?.reported ? { reported: prior.reported } : {}),
    ...(approval ? { approval } : {}),
  };
  return entry;
}

/**
 * Each pull request with a preview (or waiting for one): its entry in status.previews
 * and, when status keeps that entry (records.ts), its reports. One whose entry is left
 * out is not written on: with no record of what it was told, it would be told again
 * every round.
 */
function report(r: Round, verdicts: readonly Verdict[], lc: Lifecycle): PreviewStatus[] {
  const namespace = r.parent.metadata.namespace ?? 'default';
  const each = verdicts.flatMap((verdict) => {
    if (verdict.kind === 'none') return [];
    const { pr } = verdict;
    const prior = r.prior.get(pr.number);
    const context = contextOf(r, verdict, lc);
    const name = previewName(r.parent.metadata.name, pr.number);
    const child = r.children.get(pr.number);
    const body = commentBody({ ...context, pr, child, name, namespace });
    const reports = { ...statusReport(r, pr, context, prior), ...commentReport(r, body, pr.number, prior) };
    const approval = approvalRecord(r.approvals, pr.number);
    const entry = statusEntry(
      pr,
      context,
      hasChild(r, lc, pr.number, context.view) ? name : undefined,
      prior,
      approval,
    );
    return [{ entry, reports, eventual: { ...entry, reported: eventually(r, prior, reports) } }];
  });
  const sizes = new Map(each.map((e) => [e.entry, storedBytes(e.eventual)]));
  const kept = recorded(
    each.map((e) => e.entry),
    r.input.listedAt.toISOString(),
    (entry) => sizes.get(entry) ?? storedBytes(entry),
  );
  const keptNumbers = new Set(kept.map((e) => e.number));
  for (const { entry, reports } of each) {
    if (!keptNumbers.has(entry.number)) continue;
    if (reports.status) r.actions.push(reports.status);
    if (reports.comment) r.actions.push(reports.comment);
    if (reports.commentAt !== undefined) r.deadlines.push(reports.commentAt);
  }
  return kept;
}

/** The approval label on a fork whose head it does not approve: removed, so that approving the new commit is a new act. */
function removeStaleApprovals(r: Round, verdicts: readonly Verdict[]): void {
  for (const v of verdicts) {
    if (v.kind === 'awaitingApproval' && v.staleLabel) {
      r.actions.push({
        kind: 'removeLabel',
        number: v.pr.number,
        label: r.previews.forks.approvalLabel,
        why: PreviewReason.StaleApproval,
      });
    }
  }
}
