// The HTTPRoute cache of ping-pong Apps (src/controller/routes.ts) against the
// real API server: it lists nothing until the first App asks, then holds the
// routes and tells of their changes; where the API server serves no such
// resource (the Gateway API CRDs absent) it says so, rather than wait forever.
// The absent case asks for a group no server serves: the CRDs are installed on
// demand on the shared cluster, so their absence cannot be counted on here.
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOT_SERVED, RouteCache } from '../../src/controller/routes.ts';
import { installGatewayApi } from '../support/data-plane.ts';
import { clients, createNamespace, kubeConfig, waitFor } from '../support/kube.ts';

const { custom } = clients();
const logger = pino({ level: 'silent' });
let ns: string;
let removeNs: () => Promise<void>;
const caches: RouteCache[] = [];

beforeAll(async () => {
  await installGatewayApi();
  ({ name: ns, remove: removeNs } = await createNamespace('route-cache'));
});
afterAll(async () => {
  for (const cache of caches) cache.stop();
  await removeNs?.();
});

describe('the HTTPRoute cache', () => {
  it('holds the routes once asked, and tells of each change', async () => {
    const changed: string[] = [];
    const cache = new RouteCache({
      kubeConfig: kubeConfig(),
      namespaces: [ns],
      logger,
      changed: (namespace, name) => changed.push(`${namespace}/${name}`),
    });
    caches.push(cache);
    await custom.createNamespacedCustomObject({
      group: 'gateway.networking.k8s.io',
      version: 'v1',
      namespace: ns,
      plural: 'httproutes',
      body: {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'HTTPRoute',
        metadata: { name: 'web' },
        spec: { rules: [{ backendRefs: [{ name: 'web-ping', port: 80, weight: 3 }] }] },
      },
    });
    const found = await waitFor('the route in the cache', async () => {
      const looked = cache.lookup(ns, 'web');
      return looked !== 'syncing' && looked?.route ? looked.route : undefined;
    });
    expect(found).toMatchObject({ name: 'web', generation: 1, parents: [] });
    expect(found.rules[0]?.backendRefs).toEqual([{ group: '', kind: 'Service', name: 'web-ping', weight: 3 }]);
    expect(changed).toContain(`${ns}/web`);
    expect(cache.lookup(ns, 'nothing')).toEqual({});
  });

  it('says the Gateway API is not installed when the API server serves no such resource', async () => {
    const cache = new RouteCache({
      kubeConfig: kubeConfig(),
      namespaces: [],
      logger,
      changed: () => {},
      api: { group: 'absent.teal.dev', version: 'v1' },
    });
    caches.push(cache);
    expect(cache.lookup(ns, 'web')).toBe('syncing');
    const said = await waitFor('the cache to give up on the first list', async () => {
      const looked = cache.lookup(ns, 'web');
      return looked !== 'syncing' ? looked : undefined;
    });
    expect(said).toEqual({ unavailable: NOT_SERVED });
  });
});
