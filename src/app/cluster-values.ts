// Values Teal reads back from the labels and annotations of objects in the
// cluster. Anyone with edit rights can change them, so each is parsed into the
// shape Teal writes; anything else is treated as absent and reported once, as
// a Warning Event on the App (see Reconciler.reportValueProblems).
import { COMMIT_SHA, DNS1123_SUBDOMAIN, IMAGE_REFERENCE } from './patterns.ts';

/** The Warning Event reason for a value Teal ignored. */
export type ValueProblemReason = 'InvalidAnnotation' | 'InvalidLabel' | 'InvalidSelector';

/** A value Teal ignored, with a message that names the object, the key and why. */
export interface ValueProblem {
  reason: ValueProblemReason;
  message: string;
}

/** Where an observed object is, and the version of it that was read. */
export interface ObjectRef {
  namespace: string;
  name: string;
  resourceVersion: string;
}

/** A namespaced object's reference; undefined without a name or namespace, as nothing can be done with it. */
export function objectRef(metadata: {
  name?: string;
  namespace?: string;
  resourceVersion?: string;
}): ObjectRef | undefined {
  if (!metadata.name || !metadata.namespace) return undefined;
  return { namespace: metadata.namespace, name: metadata.name, resourceVersion: metadata.resourceVersion ?? '' };
}

/** How to read one kind of value: the parse, and what it expects, for the message. */
export interface ValueParser<T> {
  expected: string;
  parse(value: string): T | undefined;
}

const SHOWN_MAX = 64;

/** A value as a message shows it: quoted, control characters escaped, a long one cut short. */
export function shown(value: string): string {
  if (value.length <= SHOWN_MAX) return JSON.stringify(value);
  return `${JSON.stringify(`${value.slice(0, SHOWN_MAX)}…`)} (${value.length} characters)`;
}

/** A value that matches a pattern and is at most maxLength long; parsed as itself. */
export function matching(pattern: RegExp, expected: string, maxLength = 253): ValueParser<string> {
  return { expected, parse: (v) => (v.length <= maxLength && pattern.test(v) ? v : undefined) };
}

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt]([01]\d|2[0-3]):([0-5]\d):([0-5]\d)(\.\d{1,9})?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$/;

/** An RFC 3339 time, as epoch milliseconds; a day the month does not have is refused, not rolled over. */
export const rfc3339Time: ValueParser<number> = {
  expected: 'an RFC 3339 time',
  parse(v) {
    const m = RFC3339.exec(v);
    if (!m) return undefined;
    const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
    if (month < 1 || month > 12 || day < 1 || day > new Date(Date.UTC(year, month, 0)).getUTCDate()) return undefined;
    const ms = Date.parse(v);
    return Number.isFinite(ms) ? ms : undefined;
  },
};

/** A positive integer in decimal, as Teal numbers revisions; at most Number.MAX_SAFE_INTEGER. */
export const positiveInteger: ValueParser<number> = {
  expected: 'a positive integer',
  parse(v) {
    if (!/^[1-9][0-9]{0,15}$/.test(v)) return undefined;
    const n = Number(v);
    return Number.isSafeInteger(n) ? n : undefined;
  },
};

/** The 10 hex digits of hash.ts: pod template hashes and applied-Service hashes. */
export const shortHash = matching(/^[0-9a-f]{10}$/, 'a hash of 10 lowercase hex digits', 10);
export const commitSha = matching(COMMIT_SHA, 'a commit SHA of 40 lowercase hex digits', 40);
export const imageReference = matching(IMAGE_REFERENCE, 'an image reference', 255);
/** An App, Job or other object name; label values hold at most 63 characters. */
export const objectName = matching(DNS1123_SUBDOMAIN, 'an object name (DNS-1123, at most 63 characters)', 63);

const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

function isLabelKey(key: string): boolean {
  const slash = key.lastIndexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = key.slice(slash + 1);
  return LABEL_NAME.test(name) && (prefix === undefined || (prefix.length <= 253 && DNS1123_SUBDOMAIN.test(prefix)));
}

/** A label selector written as JSON ({"key":"value",...}), as Teal notes an adopted Service's; parsed as itself. */
export const selectorJson: ValueParser<string> = {
  expected: 'a JSON object of label keys to label values',
  parse(v) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(v);
    } catch {
      return undefined;
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return undefined;
    const ok = Object.entries(parsed).every(
      ([k, val]) => isLabelKey(k) && typeof val === 'string' && LABEL_VALUE.test(val),
    );
    return ok ? v : undefined;
  },
};

/**
 * Reads the labels and annotations of one object, collecting a problem for
 * each value present that does not parse. `object` names it in messages,
 * e.g. "ReplicaSet web-5d8f7c9b6a".
 */
export class ValueReader {
  readonly problems: ValueProblem[] = [];
  private readonly object: string;

  constructor(object: string) {
    this.object = object;
  }

  annotation<T>(annotations: Record<string, string> | undefined, key: string, parser: ValueParser<T>): T | undefined {
    return this.read('InvalidAnnotation', `annotation ${key}`, annotations?.[key], parser);
  }

  label<T>(labels: Record<string, string> | undefined, key: string, parser: ValueParser<T>): T | undefined {
    return this.read('InvalidLabel', `label ${key}`, labels?.[key], parser);
  }

  /**
   * A label of which the object holds a copy that cannot change after creation
   * (a ReplicaSet's selector, a Job's pod template): the copy is the truth when
   * it parses, and a label that differs from it is reported.
   */
  fixedLabel(
    labels: Record<string, string> | undefined,
    copy: Record<string, string> | undefined,
    copyName: string,
    key: string,
    parser: ValueParser<string>,
  ): string | undefined {
    const fixed = copy?.[key] === undefined ? undefined : parser.parse(copy[key]);
    if (fixed === undefined) return this.label(labels, key, parser);
    const label = labels?.[key];
    if (label !== undefined && label !== fixed) {
      this.report('InvalidLabel', `label ${key}=${shown(label)}`, `differs from ${shown(fixed)} in its ${copyName}`);
    }
    return fixed;
  }

  /** A problem no parser sees, such as a label that disagrees with an immutable copy of it. */
  report(reason: ValueProblemReason, what: string, why: string): void {
    this.problems.push({ reason, message: `${this.object}: ${what} ${why}; Teal ignores it` });
  }

  /** The problems, or nothing when there are none: for a spread into an observed object. */
  found(): { problems?: ValueProblem[] } {
    return this.problems.length > 0 ? { problems: this.problems } : {};
  }

  private read<T>(
    reason: ValueProblemReason,
    what: string,
    value: string | undefined,
    parser: ValueParser<T>,
  ): T | undefined {
    if (value === undefined) return undefined;
    const parsed = typeof value === 'string' ? parser.parse(value) : undefined;
    if (parsed === undefined) this.report(reason, `${what}=${shown(String(value))}`, `is not ${parser.expected}`);
    return parsed;
  }
}
