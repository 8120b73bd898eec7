// `kubectl teal dashboard`: the web dashboard in the user's browser, logged in
// as the kubeconfig's user, the way `kubectl argo rollouts dashboard` opens
// Argo's, but safely (issue #25 item 3):
// - it listens on 127.0.0.1 only (relay.ts), and relays each connection to the
//   operator through a port-forward (or to a local operator, --address);
// - it logs in with the kubeconfig's own bearer token (token.ts), traded for a
//   single-use login code valid 30 s (login-code.ts); the browser gets the
//   code, in the URL's fragment, never the token: the token is in no URL, in
//   no browser history and on no disk;
// - it serves until Ctrl-C.
import { spawn } from 'node:child_process';
import { DiscoveryV1Api, type V1Service } from '@kubernetes/client-node';
import { loginCodePath } from '../../app/dashboard-pages.ts';
import { apiStatusOf } from '../../kube/errors.ts';
import { browserCommand } from '../dashboard/browser.ts';
import { askLoginCode, speaksTls, tlsOperatorProblem } from '../dashboard/login-code.ts';
import { type Connector, LISTEN_HOST, portForwardConnector, startRelay, tcpConnector } from '../dashboard/relay.ts';
import {
  DEFAULT_OPERATOR_NAMESPACE,
  DEFAULT_SERVICES,
  endpointSliceSelector,
  type ForwardTarget,
  forwardTargetOf,
  listenPortOf,
  localAddressOf,
} from '../dashboard/target.ts';
import { kubeconfigBearerToken, noTokenMessage, userWithoutToken } from '../dashboard/token.ts';
import { CliError, EXIT, UsageError } from '../errors.ts';
import { explain } from '../explain.ts';
import type { Flags } from '../flags.ts';
import { Session } from '../kube.ts';

const say = (line: string) => process.stdout.write(`${line}\n`);
const warn = (line: string) => process.stderr.write(`warning: ${line}\n`);
/** An error's message; a WebSocket's error event (client-node's port-forward rejects with one) has one too. */
function messageOf(err: unknown): string {
  const message = typeof err === 'object' && err !== null ? (err as { message?: unknown }).message : undefined;
  return typeof message === 'string' && message !== '' ? message : String(err);
}

/** The operator's Service in namespace: the one named, or the first of the defaults found. */
async function findService(session: Session, namespace: string, named: string | undefined): Promise<V1Service> {
  const names = named !== undefined ? [named] : DEFAULT_SERVICES;
  for (const name of names) {
    try {
      return await session.core.readNamespacedService({ name, namespace });
    } catch (err) {
      if (apiStatusOf(err)?.code === 404) continue;
      throw explain(err, { verb: 'get', resource: 'services', name, namespace, user: session.kubeconfigUser });
    }
  }
  throw new CliError(
    `no Service ${names.map((n) => `"${n}"`).join(' or ')} in namespace "${namespace}": give the operator's namespace (-n) and Service (--service)`,
  );
}

/** A ready pod behind the operator's Service, and its HTTP port. */
async function findTarget(session: Session, namespace: string, named: string | undefined): Promise<ForwardTarget> {
  const service = await findService(session, namespace, named);
  const name = service.metadata?.name ?? '';
  const discovery = session.kc.makeApiClient(DiscoveryV1Api);
  const op = { verb: 'list', resource: 'endpointslices.discovery.k8s.io', namespace, user: session.kubeconfigUser };
  const slices = await session.call(op, () =>
    discovery.listNamespacedEndpointSlice({ namespace, labelSelector: endpointSliceSelector(name) }),
  );
  const found = forwardTargetOf(service, slices.items);
  if (!found.ok) throw new CliError(found.reason);
  return found.target;
}

/** Why a port-forward could not be made, in words: the WebSocket's refusal names only a status. */
function portForwardProblem(err: unknown, namespace: string): string {
  const message = messageOf(err);
  if (/\b403\b/.test(message)) {
    return `the API server refused the port-forward (403): RBAC must allow "get" and "create" on pods/portforward in namespace "${namespace}"`;
  }
  return `the port-forward failed: ${message}`;
}

/** The browser opened at url; false (and why, on stderr) when it could not be started or failed. */
function openBrowser(url: string): Promise<boolean> {
  const [program, args] = browserCommand(url, process.env, process.platform);
  return new Promise((resolve) => {
    const child = spawn(program, args, { stdio: 'ignore', detached: true });
    child.once('error', (err) => {
      warn(`could not start ${program}: ${err.message}`);
      resolve(false);
    });
    // xdg-open and open hand the URL over and exit; a browser named by $BROWSER may run on: it is left to run.
    child.once('spawn', () => {
      child.unref();
      resolve(true);
    });
  });
}

/** Resolves at Ctrl-C (or SIGTERM). */
const untilStopped = () =>
  new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });

export async function dashboard(_args: string[], flags: Flags): Promise<number> {
  const port = listenPortOf(flags.port);
  if (port === undefined) throw new UsageError(`--port must be a port number (0 to 65535), not "${flags.port}"`);
  const local = flags.address !== undefined ? localAddressOf(flags.address) : undefined;
  if (local && !local.ok) throw new UsageError(local.reason, 'dashboard');
  const namespace = flags.namespace ?? DEFAULT_OPERATOR_NAMESPACE;
  const session = new Session({ kubeconfig: flags.kubeconfig, context: flags.context, namespace });
  const token = await bearerTokenOf(session);
  const way = local?.ok ? directWay(local.address) : await portForwardWay(session, namespace, flags.service);
  let lastError: unknown;
  const problem = (err: unknown) => (local?.ok ? messageOf(err) : portForwardProblem(err, namespace));
  const relay = await startRelay(port, way.join, (err) => {
    lastError = err;
    warn(local?.ok ? `could not reach ${way.via}: ${messageOf(err)}` : problem(err));
  }).catch((err: unknown) => {
    throw new CliError(`could not listen on ${LISTEN_HOST}:${port}: ${messageOf(err)}`);
  });
  try {
    const base = `http://${LISTEN_HOST}:${relay.port}`;
    let url: string;
    try {
      url = `${base}${loginCodePath((await askLoginCode(relay.port, token, way.via)).code)}`;
    } catch (err) {
      // Reached, but hung up on plain HTTP: the one failure a TLS operator causes.
      if (lastError === undefined && (err as NodeJS.ErrnoException).code === 'ECONNRESET') {
        if (await speaksTls(relay.port)) throw new CliError(tlsOperatorProblem(way.via));
      }
      throw new CliError(problem(lastError ?? err));
    }
    await welcome(base, url, way.via, flags.noBrowser);
    await untilStopped();
  } finally {
    await relay.close();
  }
  return EXIT.ok;
}

/** The kubeconfig user's bearer token, which buys the single-use login code. */
async function bearerTokenOf(session: Session): Promise<string> {
  let token: string | undefined;
  try {
    token = await kubeconfigBearerToken(session.kc);
  } catch (err) {
    throw new CliError(
      `could not get the kubeconfig's token (its exec plugin or auth provider failed): ${messageOf(err)}`,
    );
  }
  if (token === undefined) throw new CliError(noTokenMessage(userWithoutToken(session.kc)));
  return token;
}

/** How the relay reaches the operator, and how to name that to the user. */
interface Way {
  join: Connector;
  via: string;
}

/** --address: straight to an operator reachable from here. */
function directWay(address: { host: string; port: number; origin: string }): Way {
  return { join: tcpConnector(address.host, address.port), via: `the operator at ${address.origin}` };
}

/** A port-forward through the API server to a ready operator pod, found again after a connection failed. */
async function portForwardWay(session: Session, namespace: string, service: string | undefined): Promise<Way> {
  const first = await findTarget(session, namespace, service);
  let next: Promise<ForwardTarget> | undefined = Promise.resolve(first);
  const join = portForwardConnector(
    session.kc,
    () => {
      // The pod found first, then (after a connection failed) whichever is ready now.
      const target = next ?? findTarget(session, namespace, service);
      next = undefined;
      return target;
    },
    (message) => warn(`port-forward: ${message}`),
  );
  return { join, via: `the operator (a port-forward to pod ${first.namespace}/${first.pod}, port ${first.port})` };
}

/** Says where the dashboard is, and opens the browser at the login URL unless told not to or it cannot. */
async function welcome(base: string, url: string, via: string, noBrowser: boolean): Promise<void> {
  say(`Serving the Teal dashboard on ${base}/ from ${via}.`);
  if (noBrowser || !(await openBrowser(url))) {
    say("Open this URL within 30 s to log in as the kubeconfig's user (it works once):");
    say(`  ${url}`);
  } else {
    say("Opened your browser, logged in as the kubeconfig's user by a single-use code.");
  }
  say('Press Ctrl-C to stop.');
}
