// The plugin's fast reads: GETs over node:https with the kubeconfig's own TLS
// and credentials, for the commands that only read (get). Loading client-node
// costs a short command most of its time (docs/benchmark.md: its generated
// clients, the npm undici it requests with, a TLS connection per request).
//
// Only what this file reads as kubectl does takes this path: a server with a
// CA (file or data) or insecure-skip-tls-verify, and a user with a token,
// tokenFile, client certificate and key, or a user name and password, with no
// proxy in the kubeconfig or the environment. Anything else (exec and
// auth-provider plugins, impersonation, in-cluster config, a kubeconfig that
// does not parse or lacks the context) gives undefined, and the command uses
// kube.ts's Session, which reads and reports it as before: one place says what
// a bad kubeconfig is.
import type { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { dirname, resolve } from 'node:path';
import type { V1Job, V1Pod, V1ReplicaSet } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { APP_API, APP_RESOURCE } from '../app/app-api.ts';
import { LABEL_APP } from '../app/labels.ts';
import { isPreviewChild } from '../app/previews-view.ts';
import { kubeconfigPaths } from '../kube/token-file.ts';
import {
  type AppObject,
  type AppReader,
  awayBuildQuery,
  buildJobsQuery,
  type ConnectOptions,
  ownedBy,
  type PreviewsReader,
  previewSelector,
  readApp,
} from './app-object.ts';
import { explain, type Operation } from './explain.ts';

// node:fs and node:os from getBuiltinModule, not imported: importing a built-in as
// a module reads every export of it, and fs.promises loads some twenty more of
// Node's modules (readline among them) at the start of `kubectl teal get`.
const { existsSync, readFileSync } = process.getBuiltinModule('node:fs');

/** Where to send a request and how: everything the API server's TLS and authentication need. */
export interface RestTarget {
  server: string;
  namespace: string;
  /** The kubeconfig user's name: who a refusal names when the server does not. */
  user: string;
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  insecure: boolean;
  servername?: string;
  authorization?: string;
}

/** One kubeconfig file as read: its folder (relative paths are from there) and its document. */
export interface KubeconfigFile {
  dir: string;
  doc: unknown;
}

type Entry = Record<string, unknown>;
const isRecord = (v: unknown): v is Entry => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** Cluster and user fields this reader sends as kubectl does; any other set field sends the command to client-node. */
const CLUSTER_FIELDS = new Set([
  'server',
  'certificate-authority',
  'certificate-authority-data',
  'insecure-skip-tls-verify',
  'tls-server-name',
  'extensions',
]);
const USER_FIELDS = new Set([
  'token',
  'tokenFile',
  'client-certificate',
  'client-certificate-data',
  'client-key',
  'client-key-data',
  'username',
  'password',
  'extensions',
]);

/** A named entry of a list (clusters, users, contexts), from the first file that names it, as kubectl merges them. */
function named(
  files: readonly KubeconfigFile[],
  list: string,
  name: string,
): { entry: Entry; dir: string } | undefined {
  for (const file of files) {
    const items = isRecord(file.doc) ? file.doc[list] : undefined;
    if (!Array.isArray(items)) continue;
    const found = items.find((item) => isRecord(item) && item.name === name) as Entry | undefined;
    if (found) return { entry: found, dir: file.dir };
  }
  return undefined;
}

/** A file path of the kubeconfig (relative to its own folder) or base64 data, read. */
function bytes(entry: Entry, field: string, dir: string): Buffer | undefined | null {
  const data = str(entry[`${field}-data`]);
  if (data) return Buffer.from(data, 'base64');
  const path = str(entry[field]);
  if (!path) return undefined;
  try {
    return readFileSync(resolve(dir, path));
  } catch {
    return null;
  }
}

const onlyKnown = (entry: Entry, known: ReadonlySet<string>) =>
  Object.entries(entry).every(([field, value]) => known.has(field) || value === undefined || value === null);

/**
 * The target of the kubeconfig files for the context chosen, or undefined when
 * this reader does not handle what they say (client-node does).
 */
export function restTarget(
  files: readonly KubeconfigFile[],
  options: ConnectOptions,
  env: NodeJS.ProcessEnv = process.env,
): RestTarget | undefined {
  if (['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy'].some((name) => env[name])) return undefined;
  const current = files.map((f) => (isRecord(f.doc) ? str(f.doc['current-context']) : undefined)).find(Boolean);
  const contextName = options.context || current;
  if (!contextName) return undefined;
  const context = named(files, 'contexts', contextName)?.entry.context;
  if (!isRecord(context)) return undefined;
  const clusterName = str(context.cluster);
  const userName = str(context.user);
  const clusterEntry = clusterName ? named(files, 'clusters', clusterName) : undefined;
  const userEntry = userName ? named(files, 'users', userName) : undefined;
  const cluster = clusterEntry?.entry.cluster;
  const user = userEntry ? userEntry.entry.user : {};
  if (!clusterEntry || !isRecord(cluster) || !isRecord(user)) return undefined;
  if (!onlyKnown(cluster, CLUSTER_FIELDS) || !onlyKnown(user, USER_FIELDS)) return undefined;
  const server = str(cluster.server);
  if (!server || !/^https?:\/\//.test(server) || server === 'http://localhost:8080') return undefined;
  const ca = bytes(cluster, 'certificate-authority', clusterEntry.dir);
  const cert = userEntry ? bytes(user, 'client-certificate', userEntry.dir) : undefined;
  const key = userEntry ? bytes(user, 'client-key', userEntry.dir) : undefined;
  const authorization = userEntry ? credentials(user, userEntry.dir) : undefined;
  // A file that cannot be read is for client-node's Session to report.
  if (ca === null || cert === null || key === null || authorization === null) return undefined;
  if ((cert === undefined) !== (key === undefined)) return undefined;
  return {
    server: server.replace(/\/+$/, ''),
    namespace: options.namespace || str(context.namespace) || 'default',
    user: userName ?? 'unknown',
    ...(ca ? { ca } : {}),
    ...(cert && key ? { cert, key } : {}),
    insecure: cluster['insecure-skip-tls-verify'] === true,
    ...(str(cluster['tls-server-name']) ? { servername: str(cluster['tls-server-name']) } : {}),
    ...(authorization ? { authorization } : {}),
  };
}

/** The Authorization header of a user: a token (or its tokenFile, trimmed, as kubectl sends it), or basic auth. */
function credentials(user: Entry, dir: string): string | undefined | null {
  const token = str(user.token);
  if (token) return `Bearer ${token}`;
  const file = str(user.tokenFile);
  if (file) {
    try {
      return `Bearer ${readFileSync(resolve(dir, file), 'utf8').trim()}`;
    } catch {
      return null;
    }
  }
  const username = str(user.username);
  if (username) return `Basic ${Buffer.from(`${username}:${str(user.password) ?? ''}`).toString('base64')}`;
  return undefined;
}

/** The kubeconfig files Session would read, parsed; undefined when there are none or one does not parse. */
export function readKubeconfigFiles(options: ConnectOptions): KubeconfigFile[] | undefined {
  const paths = kubeconfigPaths(options.kubeconfig).filter((path) => existsSync(path));
  if (paths.length === 0) return undefined;
  try {
    return paths.map((path) => ({ dir: dirname(resolve(path)), doc: parse(readFileSync(path, 'utf8')) }));
  } catch {
    return undefined;
  }
}

/** An answer other than 2xx: apiStatusOf (kube/errors.ts) reads its code and Status body. */
class HttpStatusError extends Error {
  readonly statusCode: number;
  readonly body: string;

  constructor(statusCode: number, body: string) {
    super(`HTTP ${statusCode}`);
    this.statusCode = statusCode;
    this.body = body;
  }
}

type Request = typeof httpsRequest;

/** GETs of one API server, over one keep-alive connection. */
export class RestReader implements AppReader, PreviewsReader {
  readonly namespace: string;
  private readonly target: RestTarget;
  private readonly agent: HttpAgent | HttpsAgent;
  private readonly request: Request;

  /**
   * A reader of a target, with its agent. node:http is imported only for a plain-http server:
   * importing it as a module reads every export, and its WebSocket export loads Node's undici.
   */
  static async of(target: RestTarget): Promise<RestReader> {
    if (target.server.startsWith('https:')) {
      // One connection for all of a command's requests: one TLS handshake, the requests in turn.
      const agent = new HttpsAgent({
        keepAlive: true,
        maxSockets: 1,
        ...(target.ca ? { ca: target.ca } : {}),
        ...(target.cert && target.key ? { cert: target.cert, key: target.key } : {}),
        rejectUnauthorized: !target.insecure,
        ...(target.servername ? { servername: target.servername } : {}),
      });
      return new RestReader(target, agent, httpsRequest);
    }
    const http = await import('node:http');
    return new RestReader(target, new http.Agent({ keepAlive: true, maxSockets: 1 }), http.request);
  }

  private constructor(target: RestTarget, agent: HttpAgent | HttpsAgent, request: Request) {
    this.target = target;
    this.namespace = target.namespace;
    this.agent = agent;
    this.request = request;
  }

  /** GET path: its JSON, or the failure explained as Session explains it (explain.ts). */
  async get<T>(op: Operation, path: string, query: Record<string, string> = {}): Promise<T> {
    const url = new URL(`${this.target.server}${path}`);
    for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
    try {
      return JSON.parse(await this.fetch(url)) as T;
    } catch (err) {
      throw explain(err, { user: this.target.user, ...op }, this.target.server);
    }
  }

  private fetch(url: URL): Promise<string> {
    const request = this.request;
    const headers: Record<string, string> = { Accept: 'application/json', 'User-Agent': 'kubectl-teal' };
    if (this.target.authorization) headers.Authorization = this.target.authorization;
    return new Promise((resolvePromise, reject) => {
      const req = request(url, { agent: this.agent, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          const code = res.statusCode ?? 0;
          if (code >= 200 && code < 300) resolvePromise(body);
          else reject(new HttpStatusError(code, body));
        });
      });
      req.on('error', reject);
      req.end();
    });
  }

  async getApp(name: string): Promise<AppObject> {
    const op = { verb: 'get', resource: APP_RESOURCE, name, namespace: this.namespace };
    return readApp(await this.get(op, `${appsPath(this.namespace)}/${encodeURIComponent(name)}`));
  }

  async previewApps(parent: AppObject): Promise<AppObject[]> {
    const op = { verb: 'list', resource: APP_RESOURCE, namespace: this.namespace };
    const query = { labelSelector: previewSelector(parent.metadata.name) };
    const list = await this.get<{ items?: unknown[] }>(op, appsPath(this.namespace), query);
    return (list.items ?? []).map(readApp).filter((app) => isPreviewChild(app, parent));
  }

  // The objects are the API server's JSON: their timestamps are strings where client-node's
  // typed clients give Dates (tree.ts reads both).
  async replicaSets(app: AppObject): Promise<V1ReplicaSet[]> {
    const path = `/apis/apps/v1/namespaces/${this.ns()}/replicasets`;
    return (await this.listOf<V1ReplicaSet>('replicasets.apps', path, app)).filter((rs) => ownedBy(rs, app));
  }

  async pods(app: AppObject): Promise<V1Pod[]> {
    return this.listOf<V1Pod>('pods', `/api/v1/namespaces/${this.ns()}/pods`, app);
  }

  async buildPods(app: AppObject): Promise<V1Pod[]> {
    const away = awayBuildQuery(app, this.namespace);
    if (!away) return [];
    const { namespace, labelSelector, isOwn } = away;
    const op = { verb: 'list', resource: 'pods', namespace };
    const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`;
    const list = await this.get<{ items?: V1Pod[] }>(op, path, { labelSelector });
    return (list.items ?? []).filter(isOwn);
  }

  async jobs(app: AppObject): Promise<V1Job[]> {
    const { namespace, labelSelector, isOwn } = buildJobsQuery(app, this.namespace);
    const op = { verb: 'list', resource: 'jobs.batch', namespace };
    const path = `/apis/batch/v1/namespaces/${encodeURIComponent(namespace)}/jobs`;
    const list = await this.get<{ items?: V1Job[] }>(op, path, { labelSelector });
    return (list.items ?? []).filter(isOwn);
  }

  private ns(): string {
    return encodeURIComponent(this.namespace);
  }

  private async listOf<T>(resource: string, path: string, app: AppObject): Promise<T[]> {
    const op = { verb: 'list', resource, namespace: this.namespace };
    const list = await this.get<{ items?: T[] }>(op, path, { labelSelector: `${LABEL_APP}=${app.metadata.name}` });
    return list.items ?? [];
  }

  /** Lets the process exit once the command is done. */
  close(): void {
    this.agent.destroy();
  }
}

const appsPath = (ns: string) =>
  `/apis/${APP_API.group}/${APP_API.version}/namespaces/${encodeURIComponent(ns)}/${APP_API.plural}`;

/** The fast reader for these options, or undefined when Session must read (see the top of this file). */
export async function restReader(options: ConnectOptions): Promise<RestReader | undefined> {
  const files = readKubeconfigFiles(options);
  const target = files ? restTarget(files, options) : undefined;
  return target ? RestReader.of(target) : undefined;
}
