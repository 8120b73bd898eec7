// What a pull request is told (issue #28 item 6): its preview's state, read from
// the child App's status; the commit status teal/preview; and the one comment,
// edited in place. Every text from the provider (title, branch) or from a build
// (its log's last lines) is input: escaped for markdown, stripped of any URL's
// userinfo, Authorization values and tokens of the known providers' formats.
import { MASK, withoutUserinfo } from '../app/mask.ts';
import { ANN_WAKE } from '../app/preview-labels.ts';
import { MAX_TEXT_BYTES, type PreviewState } from '../app/previews-status-schema.ts';
import type { App } from '../app/schema.ts';
import { fitText } from '../app/stored-bytes.ts';
import type { CommitStatus, PullRequest } from './pull-request.ts';

/** A preview's state, with what explains it. */
export interface StateView {
  state: PreviewState;
  message?: string;
}

const isTrue = (app: App, type: string) => app.status?.conditions?.some((c) => c.type === type && c.status === 'True');
const conditionMessage = (app: App, type: string) => app.status?.conditions?.find((c) => c.type === type)?.message;

/** Where the release of `head` stands in the child App, from its status. */
export function releaseState(child: App, head: string): StateView {
  const { build, active, source } = child.status ?? {};
  if (isTrue(child, 'InvalidSpec'))
    return { state: 'Failed', message: conditionMessage(child, 'InvalidSpec') ?? 'invalid spec' };
  if (build?.commit === head && build.phase === 'Failed')
    return { state: 'Failed', message: build.message ?? 'the build failed' };
  if (isTrue(child, 'Aborted'))
    return { state: 'Failed', message: conditionMessage(child, 'Aborted') ?? 'the release was aborted' };
  if (active?.commit === head && child.status?.phase === 'Healthy') return { state: 'Ready' };
  if (source?.commit === head && build?.commit === head && build.phase === 'Succeeded') return { state: 'Deploying' };
  return { state: 'Building' };
}

// ---- credentials ----

/** Tokens in the published formats of GitHub, GitLab and Bitbucket, and any Authorization value. */
const TOKENS =
  /\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}|ATBB[A-Za-z0-9]{20,})\b/g;
const AUTHORIZATION = /(authorization\s*[:=]\s*["']?(?:basic|bearer|token)\s+)[^\s'"]+/gi;

/** Text with no credential in it: no URL userinfo, no Authorization value, no token of a known format. */
export const withoutCredentials = (text: string): string =>
  withoutUserinfo(text).replace(AUTHORIZATION, `$1${MASK}`).replace(TOKENS, MASK);

/** One line of at most `max` characters. */
const oneLine = (text: string, max: number) => {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= max ? line : `${line.slice(0, max - 3)}...`;
};

// ---- the commit status ----

/** GitHub's limit on a commit status's description. */
export const MAX_DESCRIPTION = 140;

export interface ReportContext {
  /** Where the head commit stands (or AwaitingApproval, Expired). */
  view: StateView;
  /** Scaled to zero by sleepAfter or maxActive. */
  asleep: boolean;
  /** The commit the report is about: the pull request's head. */
  head: string;
  url?: string | undefined;
  approvalLabel: string;
}

/** The state shown: Asleep for a ready preview that sleeps; a failure or a wait says more than sleep. */
export const shownState = ({ view, asleep }: Pick<ReportContext, 'view' | 'asleep'>): PreviewState =>
  asleep && view.state === 'Ready' ? 'Asleep' : view.state;

/** The commit status for the state; undefined for an expired preview (nothing new to say). */
export function commitStatus(context: ReportContext): CommitStatus | undefined {
  const { view, head, url, approvalLabel } = context;
  const short = head.slice(0, 7);
  switch (shownState(context)) {
    case 'AwaitingApproval':
      return {
        state: 'pending',
        description: oneLine(`Waiting for approval: a maintainer adds the label ${approvalLabel}`, MAX_DESCRIPTION),
      };
    case 'Building':
      return { state: 'pending', description: `Building ${short}` };
    case 'Deploying':
      return { state: 'pending', description: `Deploying ${short}` };
    case 'Ready':
      return { state: 'success', description: 'Preview ready', ...(url ? { targetUrl: url } : {}) };
    case 'Asleep':
      return { state: 'success', description: 'Preview asleep: a new commit or a wake brings it back' };
    case 'Failed':
      return { state: 'failure', description: oneLine(withoutCredentials(view.message ?? 'failed'), MAX_DESCRIPTION) };
    case 'Expired':
      return undefined;
  }
}

// ---- the comment ----

/** The longest title or branch a comment shows. */
const MAX_SHOWN = 200;
/** The longest failure message a comment shows. */
const MAX_MESSAGE = 1024;

const HTML: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '@': '&#64;',
};

/** Provider text (a title, a branch) as one line of at most MAX_SHOWN characters, no credential in it: still text, not escaped. */
export const shownLine = (text: string): string => oneLine(withoutCredentials(text), MAX_SHOWN);

/** Text as status.previews records it: one line of at most `max` characters and MAX_TEXT_BYTES stored, no credential in it. */
export const recordedLine = (text: string, max: number): string =>
  fitText(oneLine(withoutCredentials(text), max), MAX_TEXT_BYTES);

/**
 * Provider text as plain text in markdown: on one line, HTML-escaped (no tag,
 * no entity of its own), every markdown character backslash-escaped, and "@"
 * as an entity so a title mentions nobody.
 */
export function escapeMarkdown(text: string, max = MAX_SHOWN): string {
  return oneLine(withoutCredentials(text), max)
    .replace(/[\\`*_{}[\]()#+\-.!|~]/g, '\\$&')
    .replace(/[&<>"'@]/g, (c) => HTML[c] ?? c);
}

/** A multi-line text in a <pre> block: HTML-escaped, so neither markdown nor a fence can end it. */
const preformatted = (text: string) =>
  `<pre>${withoutCredentials(text)
    .slice(0, MAX_MESSAGE)
    .replace(/[&<>"'@]/g, (c) => HTML[c] ?? c)}</pre>`;

/** "1m 32s" between two RFC 3339 times; undefined when either is missing. */
export function elapsed(from: string | undefined, to: string | undefined): string | undefined {
  const ms = from && to ? Date.parse(to) - Date.parse(from) : Number.NaN;
  if (!Number.isFinite(ms) || ms < 0) return undefined;
  const seconds = Math.round(ms / 1000);
  return seconds >= 60 ? `${Math.floor(seconds / 60)}m ${seconds % 60}s` : `${seconds}s`;
}

export interface CommentInput extends ReportContext {
  pr: PullRequest;
  /** The child App, when there is one: its name, build and checks. */
  child?: App | undefined;
  name: string;
  namespace: string;
}

/** The build time and check results of the head commit, as table rows. */
function releaseRows(child: App | undefined, head: string): string[] {
  const rows: string[] = [];
  const build = child?.status?.build;
  const took = build?.commit === head ? elapsed(build.startedAt, build.finishedAt) : undefined;
  if (took) rows.push(`| Build | ${took} |`);
  const run = child?.status?.prePromotionAnalysis;
  const revision = child?.status?.history?.find((h) => h.commit === head)?.revision;
  if (run && run.revision === revision) {
    const checks = run.checks.map((c) => `${escapeMarkdown(c.name, 63)}: ${c.phase}`).join(', ');
    rows.push(`| Checks | ${run.phase}${checks ? ` (${checks})` : ''} |`);
  }
  return rows;
}

const STATE_LINES: Record<PreviewState, string> = {
  AwaitingApproval: 'Waiting for approval: this pull request comes from a fork.',
  Building: 'Building.',
  Deploying: 'Built; deploying.',
  Ready: 'Ready.',
  Failed: 'Failed.',
  Asleep: 'Asleep: a new commit, or `kubectl annotate`, wakes it (below).',
  Expired: 'Deleted after being idle: a new commit brings it back.',
};

/** The one comment's body; the provider clients put the App's marker (previewCommentMarker) above it. */
export function commentBody(input: CommentInput): string {
  const { pr, view, head, url, name, namespace } = input;
  const state = shownState(input);
  const rows = [
    '| | |',
    '|---|---|',
    ...(url && (state === 'Ready' || state === 'Asleep') ? [`| URL | ${url} |`] : []),
    `| Commit | \`${head.slice(0, 12)}\` |`,
    ...releaseRows(input.child, head),
  ];
  const approval =
    state === 'AwaitingApproval'
      ? [
          `Someone with write access adds the label \`${escapeMarkdown(input.approvalLabel, 100)}\` to build this commit; every new commit needs it again.`,
        ]
      : [];
  const failure = state === 'Failed' && view.message ? [preformatted(view.message)] : [];
  const ns = `-n ${namespace}`;
  return [
    `### Preview of #${pr.number}: ${escapeMarkdown(pr.title)}`,
    '',
    `**${STATE_LINES[state]}**`,
    ...approval,
    '',
    ...rows,
    ...failure,
    '',
    '```',
    `kubectl teal get ${name} ${ns}`,
    `kubectl teal logs ${name} ${ns}`,
    `kubectl annotate app ${name} ${ns} --overwrite ${ANN_WAKE}=$(date -u +%Y-%m-%dT%H:%M:%SZ)`,
    '```',
  ].join('\n');
}
