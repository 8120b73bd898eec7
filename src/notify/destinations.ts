// Where an App's notifications go: its own spec.notifications, or, when it
// declares none, its namespace's team default: the ConfigMap
// teal-notifications, key `notifications`, holding the same list as YAML (or
// JSON), checked with the same schema. A default that does not parse sends
// nothing and says which field is wrong.
import { parse as parseYaml } from 'yaml';
import { type NotificationDestination, NotificationsSchema } from '../app/schema.ts';
import { formatIssues } from '../app/validate.ts';
import { errorMessage } from '../kube/errors.ts';

export const DEFAULT_CONFIGMAP = 'teal-notifications';
export const DEFAULT_KEY = 'notifications';

export type Destinations =
  | { destinations: readonly NotificationDestination[]; from: 'app' | 'namespace' | 'none' }
  | { problem: string };

/** Reads one key of a ConfigMap; undefined when there is no such ConfigMap or key. */
export type ConfigMapRead = (namespace: string, name: string, key: string) => Promise<string | undefined>;

/** The App's own destinations, from its spec as validated (the reconciler's checkSpec). */
export function ownDestinations(spec: unknown): readonly NotificationDestination[] {
  const list = (spec as { notifications?: unknown } | undefined)?.notifications;
  if (list === undefined) return [];
  const parsed = NotificationsSchema.safeParse(list);
  return parsed.success ? parsed.data : [];
}

/** The namespace default, parsed from the ConfigMap's text. */
export function parseNamespaceDefault(text: string | undefined): Destinations {
  if (text === undefined) return { destinations: [], from: 'none' };
  const where = `ConfigMap ${DEFAULT_CONFIGMAP} key ${DEFAULT_KEY}`;
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (err) {
    return { problem: `${where}: not YAML or JSON: ${err instanceof Error ? err.message.split('\n')[0] : ''}` };
  }
  const parsed = NotificationsSchema.safeParse(raw ?? []);
  if (!parsed.success) return { problem: `${where}: ${formatIssues(parsed.error.issues).join('; ')}` };
  return { destinations: parsed.data, from: 'namespace' };
}

/** The App's destinations: its own, or the namespace default read now (only when needed). */
export async function resolveDestinations(
  namespace: string,
  spec: unknown,
  readConfigMap: ConfigMapRead,
): Promise<Destinations> {
  const own = ownDestinations(spec);
  if (own.length > 0) return { destinations: own, from: 'app' };
  let text: string | undefined;
  try {
    text = await readConfigMap(namespace, DEFAULT_CONFIGMAP, DEFAULT_KEY);
  } catch (err) {
    // Notifications never hold up the status write they ride on.
    return { problem: `reading ConfigMap ${DEFAULT_CONFIGMAP}: ${errorMessage(err)}` };
  }
  return parseNamespaceDefault(text);
}
