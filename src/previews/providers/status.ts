// What a commit status carries, checked before it is sent. Pure.
import type { CommitStatus } from '../pull-request.ts';

/** GitHub refuses a longer description; the other providers get the same cut. */
export const STATUS_DESCRIPTION_MAX = 140;

/** The description on one line, cut to the limit with an ellipsis. */
export function statusDescription(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  if (line.length <= STATUS_DESCRIPTION_MAX) return line;
  return `${line.slice(0, STATUS_DESCRIPTION_MAX - 1).trimEnd()}…`;
}

/** The target URL if it is http(s) without userinfo; otherwise none is sent. */
export function statusTargetUrl(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  try {
    const url = new URL(raw);
    if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined;
    if (url.username !== '' || url.password !== '') return undefined;
    return url.href;
  } catch {
    return undefined;
  }
}

/** The status as every provider sends it: description cut, target URL checked. */
export function checkedStatus(status: CommitStatus): {
  state: CommitStatus['state'];
  description: string;
  targetUrl?: string;
} {
  const targetUrl = statusTargetUrl(status.targetUrl);
  return {
    state: status.state,
    description: statusDescription(status.description),
    ...(targetUrl ? { targetUrl } : {}),
  };
}
