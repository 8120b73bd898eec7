// `kubectl teal dashboard`'s pure parts (src/cli/dashboard/): which pod and
// port a port-forward goes to, what --address and --port accept, how the
// browser is started, what a kubeconfig without a token is told, and how the
// operator's refusal of a login code reads.
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { parse } from '../../src/cli/args.ts';
import { browserCommand } from '../../src/cli/dashboard/browser.ts';
import { loginCodeProblem } from '../../src/cli/dashboard/login-code.ts';
import { forwardTargetOf, listenPortOf, localAddressOf } from '../../src/cli/dashboard/target.ts';
import { noTokenMessage } from '../../src/cli/dashboard/token.ts';

const service = (ports: { name?: string; port: number }[]): V1Service => ({
  metadata: { namespace: 'teal-system', name: 'teal' },
  spec: { ports },
});

const slice = (
  ports: { name?: string; port: number }[],
  endpoints: { pod?: string; kind?: string; ready?: boolean }[],
): V1EndpointSlice => ({
  addressType: 'IPv4',
  ports,
  endpoints: endpoints.map((e) => ({
    addresses: ['10.244.0.9'],
    conditions: e.ready === undefined ? {} : { ready: e.ready },
    ...(e.pod ? { targetRef: { kind: e.kind ?? 'Pod', name: e.pod } } : {}),
  })),
});

describe('the port-forward target', () => {
  it("is the first ready pod behind the Service, on its http port's number", () => {
    const found = forwardTargetOf(
      service([
        { name: 'metrics', port: 9090 },
        { name: 'http', port: 80 },
      ]),
      [
        slice(
          [
            { name: 'metrics', port: 9090 },
            { name: 'http', port: 8081 },
          ],
          [{ pod: 'teal-a', ready: false }, { pod: 'teal-b', ready: true }, { pod: 'teal-c' }],
        ),
      ],
    );
    expect(found).toEqual({ ok: true, target: { namespace: 'teal-system', pod: 'teal-b', port: 8081 } });
  });

  it('takes a Service\'s only port, named or not (an EndpointSlice names an unnamed one "")', () => {
    expect(forwardTargetOf(service([{ port: 80 }]), [slice([{ name: '', port: 8081 }], [{ pod: 'p' }])])).toEqual({
      ok: true,
      target: { namespace: 'teal-system', pod: 'p', port: 8081 },
    });
  });

  it('says why there is none: no ready pod, no pod at all, or no port to choose', () => {
    const noReady = forwardTargetOf(service([{ name: 'http', port: 80 }]), [
      slice(
        [{ name: 'http', port: 8081 }],
        [
          { pod: 'p', ready: false },
          { pod: 'x', kind: 'Node' },
        ],
      ),
    ]);
    expect(noReady).toEqual({
      ok: false,
      reason: 'Service teal-system/teal has no ready pod: is the operator running? (kubectl -n teal-system get pods)',
    });
    expect(forwardTargetOf(service([{ name: 'http', port: 80 }]), [])).toMatchObject({ ok: false });
    expect(
      forwardTargetOf(
        service([
          { name: 'a', port: 1 },
          { name: 'b', port: 2 },
        ]),
        [],
      ),
    ).toEqual({ ok: false, reason: 'Service teal-system/teal has ports a, b and none named "http"' });
  });
});

describe('--address and --port', () => {
  it('--address takes an http URL on this machine', () => {
    expect(localAddressOf('http://127.0.0.1:8081')).toEqual({
      ok: true,
      address: { host: '127.0.0.1', port: 8081, origin: 'http://127.0.0.1:8081' },
    });
    expect(localAddressOf('http://localhost')).toMatchObject({ ok: true, address: { host: 'localhost', port: 80 } });
    expect(localAddressOf('http://[::1]:9000/')).toMatchObject({ ok: true, address: { host: '::1', port: 9000 } });
  });

  it('--address refuses https, another host and what is not a URL, saying why', () => {
    expect(localAddressOf('https://127.0.0.1:8443')).toMatchObject({ ok: false, reason: /an http:\/\/ URL/ });
    expect(localAddressOf('http://teal.example.com')).toMatchObject({
      ok: false,
      reason: /must be on this machine .* in the clear to teal\.example\.com/,
    });
    expect(localAddressOf('127.0.0.1:8081')).toMatchObject({ ok: false });
    expect(localAddressOf('nonsense')).toMatchObject({ ok: false, reason: /must be a URL/ });
  });

  it('--port is a TCP port; none is 0, a free one', () => {
    expect([undefined, '0', '8080', '65535'].map(listenPortOf)).toEqual([0, 0, 8080, 65535]);
    expect(['65536', '-1', 'x', '80.5', ''].map(listenPortOf)).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('the command line: -n is the operator namespace, and the dashboard flags are read', () => {
    const parsed = parse([
      'dashboard',
      '-n',
      'platform',
      '--service',
      'teal-operator',
      '--port',
      '8080',
      '--no-browser',
    ]);
    expect(parsed).toMatchObject({
      kind: 'run',
      flags: { namespace: 'platform', service: 'teal-operator', port: '8080', noBrowser: true },
    });
  });
});

describe('the browser', () => {
  const url = 'http://127.0.0.1:1234/login#code=abc';

  it("is $BROWSER's first entry, the URL last or in place of %s, as arguments and never through a shell", () => {
    expect(browserCommand(url, { BROWSER: 'firefox' }, 'linux')).toEqual(['firefox', [url]]);
    expect(browserCommand(url, { BROWSER: 'chromium --new-window:firefox' }, 'linux')).toEqual([
      'chromium',
      ['--new-window', url],
    ]);
    expect(browserCommand(url, { BROWSER: 'open-it --url=%s --quiet' }, 'linux')).toEqual([
      'open-it',
      [`--url=${url}`, '--quiet'],
    ]);
  });

  it("is the platform's opener without $BROWSER", () => {
    expect(browserCommand(url, {}, 'linux')).toEqual(['xdg-open', [url]]);
    expect(browserCommand(url, { BROWSER: '' }, 'linux')).toEqual(['xdg-open', [url]]);
    expect(browserCommand(url, {}, 'darwin')).toEqual(['open', [url]]);
  });
});

describe('a kubeconfig without a token', () => {
  it('is told it has a client certificate, and how to get a token or use OIDC', () => {
    const message = noTokenMessage({
      user: 'admin',
      context: 'kind-dev',
      cluster: 'kind-dev',
      clientCertificate: true,
    });
    expect(message).toContain('the kubeconfig\'s user "admin" (context "kind-dev") logs in with a client certificate');
    expect(message).toContain(
      'kubectl config set-credentials teal-dashboard --token="$(kubectl create token NAME -n NAMESPACE)"',
    );
    expect(message).toContain('kubectl config set-context teal-dashboard --cluster=kind-dev --user=teal-dashboard');
    expect(message).toContain('OIDC kubeconfig');
  });

  it('without a certificate either, says it has no bearer token', () => {
    expect(noTokenMessage({ user: 'u', context: 'c', cluster: 'k', clientCertificate: false })).toContain(
      'has no bearer token',
    );
  });
});

describe("the operator's answer to a login code request", () => {
  const operator = 'the operator';

  it('a 201 with a code is no problem; every other answer says what went wrong', () => {
    expect(loginCodeProblem({ status: 201, body: { code: 'c', expiresInSeconds: 30 } }, operator)).toBeUndefined();
    expect(loginCodeProblem({ status: 201, body: {} }, operator)).toBe('the operator answered no login code');
    expect(loginCodeProblem({ status: 401, body: { message: 'the token is invalid or expired' } }, operator)).toBe(
      "the operator refused the kubeconfig's token (its TokenReview): the token is invalid or expired",
    );
    expect(loginCodeProblem({ status: 404, body: {} }, operator)).toContain('a Teal older than kubectl teal dashboard');
    expect(loginCodeProblem({ status: 503, body: { message: 'the token review failed' } }, operator)).toBe(
      'the operator answered 503 to /api/v1/session/codes: the token review failed',
    );
  });
});
