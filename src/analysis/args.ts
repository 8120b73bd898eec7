// Arguments and placeholders in checks: {{args.<name>}} and the built-ins
// ({{preview.service}}, {{app.name}}, ...). Pure: the executor reads the Secrets
// and hands their values in.
//
// Keeping secrets out of status, events and logs is designed in, not left to care:
// - an argument from a Secret is an ArgValue with `secret: true`; run state
//   stores check names and measured values only, never arguments;
// - resolveCheck returns two checks: `check`, with the real values, for the
//   executor alone, and `shown`, with ***** in their place, for anything
//   recorded; plus `redact`, for text that comes back from a provider (an error
//   naming the URL, an answer echoing a header), which masks every encoded
//   form of a secret and any URL's userinfo (app/mask.ts);
// - a Secret is refused where it would leak by design: in successCondition and
//   failureCondition (they appear in verdicts) and in a job check, whose spec
//   anyone who can read Jobs can read (env valueFrom.secretKeyRef keeps it in
//   the Secret instead).

import {
  type AppArgument,
  ARG_FIELDS,
  type ArgField,
  type Check,
  CheckSchema,
  type CheckSpec,
  type SecretKeyRef,
  type TemplateArgument,
} from '../app/analysis-schema.ts';
import { MASK, masker } from '../app/mask.ts';

/** An argument after merging templates and App: a value, or where to read one. */
export type ArgSource = { name: string; value: string } | { name: string; secretKeyRef: SecretKeyRef };

/** An argument ready for substitution. */
export interface ArgValue {
  name: string;
  value: string;
  /** From a Secret: shown as ***** wherever the check is recorded. */
  secret: boolean;
}

/** What the built-in placeholders stand for in one App and revision. */
export interface Builtins {
  appName: string;
  appNamespace: string;
  previewService?: string;
  previewRevision?: number;
  previewImage?: string;
  /** Unset for an App that deploys a ready image. */
  sourceCommit?: string;
}

export type Result<T> = ({ ok: true } & T) | { ok: false; errors: string[] };

const BUILTINS: Record<string, { get: (b: Builtins) => string | undefined; missing: string; env: string }> = {
  'preview.service': { get: (b) => b.previewService, missing: 'there is no preview yet', env: 'TEAL_PREVIEW_SERVICE' },
  'preview.revision': {
    get: (b) => b.previewRevision?.toString(),
    missing: 'there is no preview yet',
    env: 'TEAL_PREVIEW_REVISION',
  },
  'preview.image': { get: (b) => b.previewImage, missing: 'there is no preview yet', env: 'TEAL_PREVIEW_IMAGE' },
  'app.name': { get: (b) => b.appName, missing: '', env: 'TEAL_APP_NAME' },
  'app.namespace': { get: (b) => b.appNamespace, missing: '', env: 'TEAL_APP_NAMESPACE' },
  'source.commit': {
    get: (b) => b.sourceCommit,
    missing: 'the App deploys a ready image, with no source',
    env: 'TEAL_SOURCE_COMMIT',
  },
};

const KNOWN = [...Object.keys(BUILTINS).map((k) => `{{${k}}}`), '{{args.<name>}}'].join(', ');

/** The built-ins a job check's containers get as environment variables (those that have a value). */
export function builtinEnv(builtins: Builtins): { name: string; value: string }[] {
  return Object.values(BUILTINS).flatMap(({ get, env }) => {
    const value = get(builtins);
    return value === undefined ? [] : [{ name: env, value }];
  });
}

// ---- merging (Argo's flattenArgs and MergeArgs) ----

type Merged = { name: string; from: string; value?: string; valueFrom?: { secretKeyRef: SecretKeyRef } };

/**
 * Combines the templates' arguments (a name given two different defaults is an
 * error) with the App's (which win), and requires a value for each. An App
 * argument no template declares stays available to inline checks.
 */
export function mergeArgs(
  templates: { name: string; args?: TemplateArgument[] | undefined }[],
  appArgs: AppArgument[] = [],
): Result<{ args: ArgSource[] }> {
  const merged = new Map<string, Merged>();
  const errors: string[] = [];
  for (const template of templates) {
    for (const arg of template.args ?? []) {
      const error = addTemplateArg(merged, { ...arg, from: `template "${template.name}"` });
      if (error) errors.push(error);
    }
  }
  for (const arg of appArgs) merged.set(arg.name, { ...arg, from: 'the App' });
  const args: ArgSource[] = [];
  for (const arg of merged.values()) {
    if (arg.value !== undefined) args.push({ name: arg.name, value: arg.value });
    else if (arg.valueFrom) args.push({ name: arg.name, secretKeyRef: arg.valueFrom.secretKeyRef });
    else errors.push(`args.${arg.name}: ${arg.from} needs a value and the App's args give none`);
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, args };
}

function addTemplateArg(merged: Map<string, Merged>, arg: Merged): string | undefined {
  const prev = merged.get(arg.name);
  if (!prev || (prev.value === undefined && prev.valueFrom === undefined)) {
    merged.set(arg.name, arg);
    return undefined;
  }
  const given = (a: Merged) => a.value ?? (a.valueFrom ? JSON.stringify(a.valueFrom) : undefined);
  const a = given(prev);
  const b = given(arg);
  if (a !== undefined && b !== undefined && a !== b) {
    return `args.${arg.name}: ${prev.from} and ${arg.from} give it different values`;
  }
  return undefined;
}

/** The Secrets to read before binding: what the executor fetches. */
export function secretRefs(args: ArgSource[]): SecretKeyRef[] {
  return args.flatMap((a) => ('secretKeyRef' in a ? [a.secretKeyRef] : []));
}

/** Puts the values read from Secrets in place; `read` answers undefined for a missing Secret or key. */
export function bindArgs(
  args: ArgSource[],
  read: (ref: SecretKeyRef) => string | undefined,
): Result<{ values: ArgValue[] }> {
  const values: ArgValue[] = [];
  const errors: string[] = [];
  for (const arg of args) {
    if (!('secretKeyRef' in arg)) {
      values.push({ name: arg.name, value: arg.value, secret: false });
      continue;
    }
    const value = read(arg.secretKeyRef);
    if (value === undefined) {
      errors.push(
        `args.${arg.name}: Secret "${arg.secretKeyRef.name}" or its key "${arg.secretKeyRef.key}" was not found`,
      );
    } else {
      values.push({ name: arg.name, value, secret: true });
    }
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, values };
}

// ---- the count, limits and durations, when a run starts ----

/**
 * A check as its run will read it: the {{args.<name>}} in its count, limits,
 * interval and initialDelay replaced (as Argo Rollouts resolves a metric when
 * it creates the run), and the check checked again whole, with each problem
 * named as `metrics "<check>".<field>`, with the arguments its value came from.
 * These fields show in status and events, so an argument from a Secret is
 * refused in them.
 */
export function resolveNumbers(spec: CheckSpec, args: ArgSource[]): Result<{ check: Check }> {
  const named = (field: string, message: string) => `metrics "${spec.name}"${field ? `.${field}` : ''}: ${message}`;
  const { filled, origins, errors } = fillArgFields(spec, args);
  if (errors.length > 0) return { ok: false, errors: errors.map(([field, message]) => named(field, message)) };
  const parsed = CheckSchema.safeParse(filled);
  if (parsed.success) return { ok: true, check: parsed.data };
  return {
    ok: false,
    errors: parsed.error.issues.map((issue) => {
      const field = issue.path.map(String).join('.');
      const from = originOf(field, issue.message, origins);
      return named(field, `${issue.message}${from === '' ? '' : ` (${from})`}`);
    }),
  };
}

/** The check with its arguments in those fields; for each field filled, the text and the value it gave. */
function fillArgFields(spec: CheckSpec, args: ArgSource[]) {
  const filled: Record<string, unknown> = { ...spec };
  const origins = new Map<string, string>();
  const errors: [field: string, message: string][] = [];
  for (const field of ARG_FIELDS) {
    const text = spec[field];
    if (typeof text !== 'string') continue;
    const out = substitute(text, field, plainLookup(args), false);
    if (out.errors.length > 0) {
      errors.push(...out.errors.map((e): [string, string] => [field, e]));
      continue;
    }
    if (text.includes('{{')) origins.set(field, `${text} gave "${out.text}"`);
    if (!NUMERIC.has(field)) filled[field] = out.text;
    else if (/^[0-9]+$/.test(out.text)) filled[field] = Number(out.text);
    else errors.push([field, `must be a whole number (${text} gave "${out.text}")`]);
  }
  return { filled, origins, errors };
}

/** Where a problem's values came from: its field's, or for a rule, those of the fields its message names. */
function originOf(field: string, message: string, origins: Map<string, string>): string {
  if (field !== '') return origins.get(field) ?? '';
  return ARG_FIELDS.filter((f) => origins.has(f) && new RegExp(`\\b${f}\\b`).test(message))
    .map((f) => `${f}: ${origins.get(f)}`)
    .join('; ');
}

const NUMERIC: ReadonlySet<ArgField> = new Set(['count', 'failureLimit', 'inconclusiveLimit', 'consecutiveErrorLimit']);

/** Arguments with a plain value; one from a Secret may not show where these fields show. */
function plainLookup(args: ArgSource[]): Lookup {
  return (tag, field) => {
    const arg = tag.startsWith('args.') ? args.find((a) => a.name === tag.slice('args.'.length)) : undefined;
    if (!arg)
      return { error: `{{${tag}}} names no argument: declare it in the template's args or give it in the App's args` };
    if ('secretKeyRef' in arg) return { error: secretRefusal(tag, field) };
    return { value: arg.value, secret: false };
  };
}

// ---- substitution ----

export interface Resolved {
  /** Every placeholder replaced: for the executor only, never recorded or logged. */
  check: Check;
  /** Secret values shown as *****: what status, events and logs may carry. */
  shown: Check;
  /** Masks secret values in text that comes back from the provider. */
  redact: (text: string) => string;
}

type Lookup = (tag: string, field: string) => { value: string; secret: boolean } | { error: string };

/**
 * Replaces the placeholders of a check's conditions and provider. Every
 * unknown or valueless placeholder is an error naming the check and field.
 */
export function resolveCheck(check: Check, values: ArgValue[], builtins: Builtins): Result<Resolved> {
  const errors: string[] = [];
  const lookup = lookupIn(values, builtins);
  const sub = (text: string, field: string, shown: boolean) => {
    const out = substitute(text, field, lookup, shown);
    if (!shown) errors.push(...out.errors.map((e) => `check "${check.name}", ${field}: ${e}`));
    return out.text;
  };
  const build = (shown: boolean): Check => {
    const { successCondition, failureCondition, provider } = check;
    return {
      ...check,
      ...(successCondition !== undefined ? { successCondition: sub(successCondition, 'successCondition', shown) } : {}),
      ...(failureCondition !== undefined ? { failureCondition: sub(failureCondition, 'failureCondition', shown) } : {}),
      provider: walk(provider, 'provider', (text, field) => sub(text, field, shown)) as Check['provider'],
    };
  };
  const resolved = build(false);
  const shown = build(true);
  errors.push(...urlProblems(resolved).map((e) => `check "${check.name}", ${e}`));
  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, check: resolved, shown, redact: redactor(values) };
}

/** Masks every secret value in text, in any of its encoded forms, and every URL's userinfo. */
export function redact(text: string, values: ArgValue[]): string {
  return redactor(values)(text);
}

function redactor(values: ArgValue[]): (text: string) => string {
  return masker(values.filter((v) => v.secret).map((v) => v.value));
}

function lookupIn(values: ArgValue[], builtins: Builtins): Lookup {
  return (tag, field) => {
    if (tag.startsWith('args.')) {
      const arg = values.find((v) => v.name === tag.slice('args.'.length));
      if (!arg)
        return {
          error: `{{${tag}}} names no argument: declare it in the template's args or give it in the App's args`,
        };
      if (arg.secret && !secretAllowed(field)) return { error: secretRefusal(tag, field) };
      return { value: arg.value, secret: arg.secret };
    }
    const builtin = BUILTINS[tag];
    if (!builtin) return { error: `unknown placeholder {{${tag}}}: use one of ${KNOWN}` };
    const value = builtin.get(builtins);
    if (value === undefined) return { error: `{{${tag}}} has no value here: ${builtin.missing}` };
    return { value, secret: false };
  };
}

const secretAllowed = (field: string) => field.startsWith('provider.web.') || field.startsWith('provider.prometheus.');

function secretRefusal(tag: string, field: string): string {
  if (field.startsWith('provider.job.')) {
    return `{{${tag}}} comes from a Secret and would be written into the Job spec: use env valueFrom.secretKeyRef`;
  }
  return `{{${tag}}} comes from a Secret and ${field} shows in status and events`;
}

const PLACEHOLDER = /\{\{([^{}]*)\}\}/g;

function substitute(text: string, field: string, lookup: Lookup, shown: boolean): { text: string; errors: string[] } {
  const errors: string[] = [];
  const out = text.replace(PLACEHOLDER, (_whole, inner: string) => {
    const found = lookup(inner.trim(), field);
    if ('error' in found) {
      errors.push(found.error);
      return '';
    }
    return shown && found.secret ? MASK : found.value;
  });
  if (text.replace(PLACEHOLDER, '').includes('{{')) errors.push('"{{" without a matching "}}"');
  return { text: out, errors };
}

/** Applies `sub` to every string under `value`, naming each by its path. */
function walk(value: unknown, path: string, sub: (text: string, field: string) => string): unknown {
  if (typeof value === 'string') return sub(value, path);
  if (Array.isArray(value)) return value.map((item, i) => walk(item, `${path}[${i}]`, sub));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, `${path}.${k}`, sub)]));
  }
  return value;
}

/** URLs are checked again once whole; the value is not echoed, as it may hold a secret. */
function urlProblems(check: Check): string[] {
  const { web, prometheus } = check.provider;
  const problems: string[] = [];
  if (web && !isHttpUrl(web.url))
    problems.push('provider.web.url: not an http(s) URL once its placeholders are replaced');
  if (prometheus && !isHttpUrl(prometheus.address)) {
    problems.push('provider.prometheus.address: not an http(s) URL once its placeholders are replaced');
  }
  return problems;
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}
