// The names previews give: the child App's, and the host it answers at. Each is
// DNS-safe whatever the parent's name or the pull request's number: cut and
// suffixed with a hash of what was cut when too long (src/app/hash.ts), so two
// long names that share a start still differ.
import { sha } from '../app/hash.ts';
import type { PreviewsExposure } from '../app/previews-schema.ts';

/**
 * The longest child App name: "<name>-preview" must stay a 63-character
 * Service name (the App schema's rule), and the child sets no previewService.
 */
export const MAX_PREVIEW_NAME = 55;
/** The longest DNS label (RFC 1035), and host name. */
export const MAX_HOST_LABEL = 63;
export const MAX_HOST = 253;

const HASH_LENGTH = 6;

/** text cut to `room` characters, without a trailing "-" (a name may not end with one). */
const cut = (text: string, room: number) => text.slice(0, Math.max(1, room)).replace(/-+$/, '');

/** `<app>-pr-<number>`, or when longer than 55 characters, the app's start, a hash of the app name, then -pr-<number>. */
export function previewName(app: string, number: number): string {
  const whole = `${app}-pr-${number}`;
  if (whole.length <= MAX_PREVIEW_NAME) return whole;
  const suffix = `-${sha(app).slice(0, HASH_LENGTH)}-pr-${number}`;
  return `${cut(app, MAX_PREVIEW_NAME - suffix.length)}${suffix}`;
}

/** A host label of at most 63 characters: as it is, or its start and a hash of it. */
export function hostLabel(label: string): string {
  if (label.length <= MAX_HOST_LABEL) return label;
  const suffix = `-${sha(label).slice(0, HASH_LENGTH)}`;
  return `${cut(label, MAX_HOST_LABEL - suffix.length)}${suffix}`;
}

export interface HostValues {
  number: number;
  /** The parent App's name. */
  app: string;
  /** The child App's name. */
  name: string;
}

/** The host template with its placeholders filled and every label kept to 63 characters; undefined past 253. */
export function expandHost(template: string, values: HostValues): string | undefined {
  const filled = template.replace(/\{\{(number|app|name)\}\}/g, (_, key: keyof HostValues) => String(values[key]));
  const host = filled.split('.').map(hostLabel).join('.');
  return host.length <= MAX_HOST ? host : undefined;
}

/** The exposure's host template, whichever kind it is. */
export function hostTemplate(exposure: PreviewsExposure): string | undefined {
  return exposure.ingress?.host ?? exposure.httpRoute?.hostname;
}
