// Configuration as part of the revision: the ConfigMaps and Secrets a pod
// template references are snapshotted per App as owned, immutable copies named
// after their content, and the revision's template references the copies. A
// content change is then a new template, so a new pod-template-hash: a new
// revision, previewed and promoted like an image change, and undo finds the
// old content still there. Pure: the reconciler reads the sources (the
// ConfigMap cache, Secrets by GET) and hands in their digests.
import { createHash, createHmac } from 'node:crypto';
import { LABEL_APP, LABEL_MANAGED_BY, MANAGED_BY } from '../app/labels.ts';
import type { OwnerReference } from '../app/owner.ts';

export type ConfigKind = 'configmap' | 'secret';

/** On the App: references left pointing at the live object, e.g. "configmap/flags,secret/db". */
export const ANN_LIVE_CONFIG = 'teal.dev/live-config';
/** On a ReplicaSet: the copies its template references ("configmap/x-1a2b3c4d5e,secret/y-..."). */
export const ANN_CONFIG_COPIES = 'teal.dev/config-copies';
/** On a copy: the object it was copied from. */
export const ANN_COPY_OF = 'teal.dev/copy-of';
/** On a copy: it is one (the ConfigMap cache leaves copies out). */
export const LABEL_CONFIG_COPY = 'teal.dev/config-copy';

/** One place in the pod spec that names a ConfigMap or a Secret. */
export interface ConfigRef {
  kind: ConfigKind;
  name: string;
  optional: boolean;
  /** Where, for messages: spec.template.spec.volumes[0].configMap.name. */
  field: string;
}

/** What the reconciler found of a source: its digest (never its data), or nothing. */
export type SourceState = { digest: string } | 'missing';

/** A copy the revision needs: made from `source` if it does not exist yet. */
export interface ConfigCopy {
  kind: ConfigKind;
  source: string;
  name: string;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
export const refKey = (kind: ConfigKind, name: string): string => `${kind}/${name}`;

/** A holder of `nameField` (configMap, secretKeyRef...) and the reference it makes. */
interface Slot {
  holder: Obj;
  nameField: 'name' | 'secretName';
  ref: ConfigRef;
}

function slot(holder: unknown, kind: ConfigKind, nameField: Slot['nameField'], field: string): Slot[] {
  if (!isObj(holder)) return [];
  const name = holder[nameField];
  if (typeof name !== 'string' || name === '') return [];
  const ref = { kind, name, optional: holder.optional === true, field: `${field}.${nameField}` };
  return [{ holder, nameField, ref }];
}

function volumeSlots(spec: Obj, base: string): Slot[] {
  return list(spec.volumes).flatMap((v, i) => {
    if (!isObj(v)) return [];
    const at = `${base}.volumes[${i}]`;
    const projected = isObj(v.projected) ? list(v.projected.sources) : [];
    return [
      ...slot(v.configMap, 'configmap', 'name', `${at}.configMap`),
      ...slot(v.secret, 'secret', 'secretName', `${at}.secret`),
      ...projected.flatMap((s, j) =>
        isObj(s)
          ? [
              ...slot(s.configMap, 'configmap', 'name', `${at}.projected.sources[${j}].configMap`),
              ...slot(s.secret, 'secret', 'name', `${at}.projected.sources[${j}].secret`),
            ]
          : [],
      ),
    ];
  });
}

function containerSlots(spec: Obj, base: string): Slot[] {
  return (['initContainers', 'containers'] as const).flatMap((group) =>
    list(spec[group]).flatMap((c, i) => {
      if (!isObj(c)) return [];
      const at = `${base}.${group}[${i}]`;
      const envFrom = list(c.envFrom).flatMap((e, j) =>
        isObj(e)
          ? [
              ...slot(e.configMapRef, 'configmap', 'name', `${at}.envFrom[${j}].configMapRef`),
              ...slot(e.secretRef, 'secret', 'name', `${at}.envFrom[${j}].secretRef`),
            ]
          : [],
      );
      const env = list(c.env).flatMap((e, j) => {
        const from = isObj(e) && isObj(e.valueFrom) ? e.valueFrom : undefined;
        if (!from) return [];
        return [
          ...slot(from.configMapKeyRef, 'configmap', 'name', `${at}.env[${j}].valueFrom.configMapKeyRef`),
          ...slot(from.secretKeyRef, 'secret', 'name', `${at}.env[${j}].valueFrom.secretKeyRef`),
        ];
      });
      return [...envFrom, ...env];
    }),
  );
}

const BASE = 'spec.template.spec';

function slots(podSpec: unknown): Slot[] {
  if (!isObj(podSpec)) return [];
  return [...volumeSlots(podSpec, BASE), ...containerSlots(podSpec, BASE)];
}

/** Every reference the pod spec makes: volumes, projected sources, envFrom and valueFrom, init containers too. */
export function findConfigRefs(podSpec: unknown): ConfigRef[] {
  return slots(podSpec).map((s) => s.ref);
}

/** The sources to read: each (kind, name) once, opted-out ones left out. */
export function sourcesToRead(podSpec: unknown, live: ReadonlySet<string>): { kind: ConfigKind; name: string }[] {
  const seen = new Map<string, { kind: ConfigKind; name: string }>();
  for (const { kind, name } of findConfigRefs(podSpec)) {
    const key = refKey(kind, name);
    if (!live.has(key)) seen.set(key, { kind, name });
  }
  return [...seen.values()];
}

/** The App's opt-out annotation, read: "configmap/a, secret/b"; an entry of another shape is a problem. */
export function parseLiveConfig(value: string | undefined): { live: Set<string>; problems: string[] } {
  const live = new Set<string>();
  const problems: string[] = [];
  for (const entry of (value ?? '').split(',').map((e) => e.trim())) {
    if (entry === '') continue;
    const m = /^(configmap|secret)\/([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?)$/.exec(entry);
    if (m?.[1] && m[2]) live.add(refKey(m[1] as ConfigKind, m[2]));
    else
      problems.push(
        `metadata.annotations["${ANN_LIVE_CONFIG}"]: ${JSON.stringify(entry)} is not configmap/NAME or secret/NAME`,
      );
  }
  return { live, problems };
}

// ---- when Secrets are read again ----

/**
 * How often the Secrets an App's template references are read again (by GET:
 * Teal may not list or watch Secrets), and the App woken to do so. A Secret
 * edit is seen within this; a ConfigMap edit at once, through its watch.
 */
export const CONFIG_RECHECK_MS = 30_000;

/** Whether Secrets last read at `readAt` must be read now: the interval is over, or a name was never read. */
export function secretsDue(
  known: { readAt: number; names: ReadonlySet<string> } | undefined,
  names: readonly string[],
  nowMs: number,
): boolean {
  if (!known || nowMs - known.readAt >= CONFIG_RECHECK_MS) return true;
  return !names.every((n) => known.names.has(n));
}

/** When to wake the App to read them again: exactly once the interval is over, never a busy loop. */
export const recheckAfterMs = (readAt: number, nowMs: number): number =>
  Math.max(0, readAt + CONFIG_RECHECK_MS - nowMs) + 1;

// ---- content digests and copy names ----

function canonicalJson(value: Record<string, string> | undefined): string {
  const entries = Object.entries(value ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify(entries);
}

/** A ConfigMap's content, as the cache keeps it: a digest, never the data. */
export function configMapDigest(data: Record<string, string> | undefined, binary: Record<string, string> | undefined) {
  return createHash('sha256')
    .update(`${canonicalJson(data)}\n${canonicalJson(binary)}`)
    .digest('hex');
}

/**
 * A Secret's content, keyed by its own uid and the App's: a copy's name is
 * visible to whoever may read pods, and an unkeyed hash of a short secret
 * could be guessed offline from it. The Secret's uid is only seen by those
 * who may read the Secret itself.
 */
export function secretDigest(
  appUid: string,
  secretUid: string,
  type: string,
  data: Record<string, string> | undefined,
) {
  return createHmac('sha256', `teal-config/${appUid}/${secretUid}`)
    .update(`${type}\n${canonicalJson(data)}`)
    .digest('hex');
}

/** A copy per App (its uid) and content: two Apps never share one, so neither's clean-up breaks the other. */
export function copyName(appUid: string, source: string, digest: string): string {
  const hash = createHash('sha256').update(`${appUid}\n${digest}`).digest('hex').slice(0, 10);
  return `${source.slice(0, 253 - 11).replace(/[-.]+$/, '')}-${hash}`;
}

// ---- the revision's template ----

export interface ConfiguredTemplate<T> {
  template: T;
  copies: ConfigCopy[];
  /** Required references to a missing object, by field: the App cannot be planned. */
  problems: string[];
}

/**
 * The template with every reference that is not opted out pointed at its copy.
 * An optional reference to a missing object stays as it is (Kubernetes starts
 * the pod without it); a required one is a problem naming the field.
 */
export function configureTemplate<T extends { spec: unknown }>(
  template: T,
  appUid: string,
  sources: ReadonlyMap<string, SourceState>,
  live: ReadonlySet<string>,
): ConfiguredTemplate<T> {
  const out = structuredClone(template);
  const copies = new Map<string, ConfigCopy>();
  const problems: string[] = [];
  for (const { holder, nameField, ref } of slots(out.spec)) {
    const key = refKey(ref.kind, ref.name);
    if (live.has(key)) continue;
    const state = sources.get(key);
    if (state === undefined || state === 'missing') {
      if (!ref.optional) problems.push(`${ref.field}: ${kindName(ref.kind)} ${JSON.stringify(ref.name)} not found`);
      continue;
    }
    const name = copyName(appUid, ref.name, state.digest);
    holder[nameField] = name;
    copies.set(refKey(ref.kind, name), { kind: ref.kind, source: ref.name, name });
  }
  return { template: out, copies: [...copies.values()], problems };
}

export const kindName = (kind: ConfigKind): string => (kind === 'configmap' ? 'ConfigMap' : 'Secret');

// ---- copies deleted by hand ----

/**
 * The source a copy was made from, read back from its name: copyName's
 * inverse for the names it did not shorten (a shortened one is not found
 * again, so its copy is reported rather than remade).
 */
export function copySource(copy: string): string | undefined {
  return /^(.+)-[0-9a-f]{10}$/.exec(copy)?.[1];
}

/** The copies the pods of a ReplicaSet that runs (or is to run) pods reference, each once: "configmap/NAME". */
export function copiesInUse(
  replicaSets: readonly { copies?: readonly string[]; specReplicas: number; deleting: boolean }[],
): { kind: ConfigKind; name: string }[] {
  const keys = new Set(
    replicaSets.filter((rs) => rs.specReplicas > 0 && !rs.deleting).flatMap((rs) => rs.copies ?? []),
  );
  return [...keys].map((key) => {
    const [kind, name] = key.split('/') as [ConfigKind, string];
    return { kind, name };
  });
}

/** A copy in use that does not exist, and what its source (copySource) holds now. */
export interface MissingCopy {
  kind: ConfigKind;
  name: string;
  source?: string;
  state: SourceState;
}

/**
 * What to do about copies in use that someone deleted: made again from the
 * source while it still has the content the copy is named after (the name
 * is the content's), else lost: the pods that need it cannot start, and only
 * a person can bring that content back.
 */
export function repairCopies(
  appUid: string,
  missing: readonly MissingCopy[],
): { recreate: ConfigCopy[]; lost: MissingCopy[] } {
  const recreate: ConfigCopy[] = [];
  const lost: MissingCopy[] = [];
  for (const m of missing) {
    const same =
      m.source !== undefined && m.state !== 'missing' && copyName(appUid, m.source, m.state.digest) === m.name;
    if (same && m.source !== undefined) recreate.push({ kind: m.kind, source: m.source, name: m.name });
    else lost.push(m);
  }
  return { recreate, lost };
}

/** A lost copy, named for the condition, the Event and the message. */
export function lostCopyMessage(lost: readonly MissingCopy[]): string {
  const each = lost.map((m) => {
    const why =
      m.source === undefined
        ? 'its source is unknown'
        : m.state === 'missing'
          ? `${kindName(m.kind)} ${m.source} is gone`
          : `${kindName(m.kind)} ${m.source} no longer has its content`;
    return `${kindName(m.kind)} ${m.name} is missing and cannot be made again (${why})`;
  });
  return `${each.join('; ')}: pods that reference it cannot start until it is back; restore it, or promote a revision that does not use it`;
}

/** The ReplicaSet annotation listing its copies. */
export const formatCopies = (copies: readonly ConfigCopy[]): string =>
  copies.map((c) => refKey(c.kind, c.name)).join(',');

/** The annotation read back; anything not of the shape Teal writes is left out. */
export function parseCopies(value: string | undefined): string[] {
  return (value ?? '').split(',').filter((e) => /^(configmap|secret)\/[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(e));
}

/**
 * The copies that go with the ReplicaSets being deleted: those no other
 * ReplicaSet of the App references, nor the revision about to be made.
 */
export function copiesFreedBy(
  deleted: readonly { name: string; copies?: readonly string[] }[],
  all: readonly { name: string; copies?: readonly string[] }[],
  wanted: readonly ConfigCopy[],
): { kind: ConfigKind; name: string }[] {
  const going = new Set(deleted.map((rs) => rs.name));
  const kept = new Set([
    ...all.filter((rs) => !going.has(rs.name)).flatMap((rs) => rs.copies ?? []),
    ...wanted.map((c) => refKey(c.kind, c.name)),
  ]);
  const freed = new Set(deleted.flatMap((rs) => rs.copies ?? []).filter((c) => !kept.has(c)));
  return [...freed].map((key) => {
    const [kind, name] = key.split('/') as [ConfigKind, string];
    return { kind, name };
  });
}

/** The copy as created: immutable, owned by the App (deleting it collects them), data as read. */
export function copyManifest(
  copy: ConfigCopy,
  namespace: string,
  app: string,
  owner: OwnerReference,
  content: { data?: Record<string, string>; binaryData?: Record<string, string>; type?: string },
) {
  const metadata = {
    name: copy.name,
    namespace,
    labels: { [LABEL_APP]: app, [LABEL_CONFIG_COPY]: 'true', [LABEL_MANAGED_BY]: MANAGED_BY },
    annotations: { [ANN_COPY_OF]: copy.source },
    ownerReferences: [owner],
  };
  if (copy.kind === 'configmap') {
    return {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata,
      immutable: true,
      ...(content.data ? { data: content.data } : {}),
      ...(content.binaryData ? { binaryData: content.binaryData } : {}),
    };
  }
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata,
    immutable: true,
    type: content.type ?? 'Opaque',
    ...(content.data ? { data: content.data } : {}),
  };
}
