// What goes over the wire for one pending notification: Teal's own JSON for a
// generic webhook, signed as the generic webhooks Teal accepts are
// (X-Signature: sha256=<hex HMAC-SHA256 of the body>), so a receiver verifies
// it with the same code; or a Slack incoming-webhook body (text, the
// fallback, and one mrkdwn section).

import type { NotificationDestination, NotificationTrigger, PendingNotification } from '../app/schema.ts';
import { signSha256 } from '../app/signature.ts';

export const DELIVERY_HEADER = 'x-teal-delivery';
export const TRIGGER_HEADER = 'x-teal-trigger';
/** The header the generic webhook provider reads (webhook-providers.ts). */
export const SIGNATURE_HEADER = 'x-signature';

export interface NotifiedApp {
  namespace: string;
  name: string;
}

/** The generic webhook body: every field present, null when it does not apply. */
export interface WebhookBody {
  id: string;
  trigger: NotificationTrigger;
  app: NotifiedApp;
  revision: number | null;
  image: string | null;
  phase: string | null;
  message: string | null;
  by: string | null;
  via: string | null;
  at: string;
}

export interface Request {
  body: string;
  headers: Record<string, string>;
}

export function webhookBody(app: NotifiedApp, n: PendingNotification): WebhookBody {
  return {
    id: n.id,
    trigger: n.trigger,
    app: { namespace: app.namespace, name: app.name },
    revision: n.revision ?? null,
    image: n.image ?? null,
    phase: n.phase ?? null,
    message: n.message ?? null,
    by: n.by ?? null,
    via: n.via ?? null,
    at: n.at,
  };
}

const HEADLINE: Record<NotificationTrigger, string> = {
  'build-failed': 'build failed',
  'preview-ready': 'preview ready, waiting for promotion',
  promoted: 'promoted',
  aborted: 'aborted',
  degraded: 'degraded',
  healthy: 'healthy',
  undo: 'undo',
};

/** Slack reads &, < and > as markup (<!channel> would ping everyone): escaped. */
function slackEscape(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

export function slackBody(app: NotifiedApp, n: PendingNotification): { text: string; blocks: unknown[] } {
  const revision = n.revision !== undefined ? ` revision ${n.revision}` : '';
  const actor = n.by ? ` by ${n.by}${n.via ? ` (${n.via})` : ''}` : '';
  const text = slackEscape(`${app.namespace}/${app.name}${revision}: ${HEADLINE[n.trigger]}${actor}`);
  const detail = [n.message, n.image].filter((s): s is string => s !== undefined).map(slackEscape);
  const lines = [`*${text}*`, ...detail, `delivery ${n.id}`];
  return { text, blocks: [{ type: 'section', text: { type: 'mrkdwn', text: lines.join('\n') } }] };
}

/** The request for one notification; the signing key, when given, signs the exact body sent. */
export function requestFor(
  destination: Pick<NotificationDestination, 'type'>,
  app: NotifiedApp,
  n: PendingNotification,
  signingKey?: string,
): Request {
  const body = JSON.stringify(destination.type === 'slack' ? slackBody(app, n) : webhookBody(app, n));
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'teal-notifications',
    [DELIVERY_HEADER]: n.id,
    [TRIGGER_HEADER]: n.trigger,
  };
  if (signingKey !== undefined) headers[SIGNATURE_HEADER] = signSha256(body, signingKey);
  return { body, headers };
}
