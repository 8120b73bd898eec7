// The login code `kubectl teal dashboard` asks the operator for (POST
// /api/v1/session/codes, src/api/session-codes.ts) with the kubeconfig's
// bearer token, through its own relay: the same path the browser then takes.
// One HTTP request of node:http, on a connection of its own that closes after.
import { request } from 'node:http';
import { connect } from 'node:tls';
import { LISTEN_HOST } from './relay.ts';

export const LOGIN_CODES_PATH = '/api/v1/session/codes';

export interface LoginCode {
  code: string;
  expiresInSeconds: number;
}

interface Answer {
  status: number;
  body: unknown;
}

function post(port: number, path: string, token: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: LISTEN_HOST,
        port,
        path,
        method: 'POST',
        agent: false,
        headers: { authorization: `Bearer ${token}`, accept: 'application/json', 'content-length': '0' },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => {
          let body: unknown;
          try {
            body = JSON.parse(text);
          } catch {
            body = text;
          }
          resolve({ status: res.statusCode ?? 0, body });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const messageOf = (body: unknown): string =>
  typeof body === 'object' && body !== null && typeof (body as { message?: unknown }).message === 'string'
    ? (body as { message: string }).message
    : typeof body === 'string' && body !== ''
      ? body.slice(0, 200)
      : 'no message';

/** Why the operator gave no code, in words; undefined when the answer holds one. */
export function loginCodeProblem(answer: Answer, operator: string): string | undefined {
  const { status, body } = answer;
  if (status === 201) {
    const code = (body as Partial<LoginCode> | undefined)?.code;
    return typeof code === 'string' && code !== '' ? undefined : `${operator} answered no login code`;
  }
  if (status === 401) return `${operator} refused the kubeconfig's token (its TokenReview): ${messageOf(body)}`;
  if (status === 404) {
    return `${operator} has no ${LOGIN_CODES_PATH} (a Teal older than kubectl teal dashboard): upgrade it, or log in on its page with a token`;
  }
  return `${operator} answered ${status} to ${LOGIN_CODES_PATH}: ${messageOf(body)}`;
}

/** A login code of the operator behind the relay on port; throws Error with the reason. */
export async function askLoginCode(port: number, token: string, operator: string): Promise<LoginCode> {
  const answer = await post(port, LOGIN_CODES_PATH, token);
  const problem = loginCodeProblem(answer, operator);
  if (problem !== undefined) throw new Error(problem);
  return answer.body as LoginCode;
}

/** How long the TLS probe waits for a handshake before it calls the operator not TLS. */
const PROBE_TIMEOUT_MS = 10_000;

/**
 * Whether the operator behind the relay on port answers a TLS handshake: an
 * operator serving TLS itself hangs up on the plain HTTP of the code request,
 * which says nothing of why. The probe sends a ClientHello and nothing else,
 * so its certificate is not checked: it is not trusted with anything.
 */
export function speaksTls(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: LISTEN_HOST, port, rejectUnauthorized: false, timeout: PROBE_TIMEOUT_MS });
    const done = (tls: boolean) => {
      socket.destroy();
      resolve(tls);
    };
    socket.once('secureConnect', () => done(true));
    socket.once('error', () => done(false));
    socket.once('timeout', () => done(false));
  });
}

/** What to do about an operator that serves TLS itself. */
export const tlsOperatorProblem = (operator: string): string =>
  `${operator} serves TLS itself (--tls-cert-file, the chart's api.tls), and kubectl teal dashboard relays plain HTTP only: reach it through an Ingress with TLS, or kubectl port-forward and its login page`;
