// The Gateway API's standard channel on the test cluster (issue #26 §1):
// installed from the pinned sigs.k8s.io/gateway-api module by
// installGatewayApi(), and the API server validating HTTPRoutes with the
// CRD's own schema and CEL rules. Needs no root.
import { ApiException } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayApiVersion } from '../cluster/gateway-api.ts';
import { installGatewayApi } from '../support/data-plane.ts';
import { clients, createNamespace } from '../support/kube.ts';

const { ext, custom } = clients();
const GROUP = 'gateway.networking.k8s.io';
let ns: string;
let removeNs: () => Promise<void>;
let crds: string[];

beforeAll(async () => {
  crds = await installGatewayApi();
  ({ name: ns, remove: removeNs } = await createNamespace('gateway-api'));
});
afterAll(async () => removeNs?.());

function route(name: string, backendRefs: Record<string, unknown>[]): Record<string, unknown> {
  return {
    apiVersion: `${GROUP}/v1`,
    kind: 'HTTPRoute',
    metadata: { name },
    spec: { parentRefs: [{ name: 'gw' }], rules: [{ backendRefs }] },
  };
}

const create = (body: Record<string, unknown>) =>
  custom.createNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: 'httproutes', body });

async function rejection(body: Record<string, unknown>): Promise<string> {
  try {
    await create(body);
  } catch (err) {
    if (err instanceof ApiException) return `${err.code} ${String(err.body)}`;
    throw err;
  }
  throw new Error('the API server accepted it');
}

describe('the Gateway API standard channel', () => {
  it('installs the standard CRDs of the pinned module version, established', async () => {
    expect(crds).toEqual(
      expect.arrayContaining([
        `gatewayclasses.${GROUP}`,
        `gateways.${GROUP}`,
        `httproutes.${GROUP}`,
        `referencegrants.${GROUP}`,
      ]),
    );
    for (const name of crds) {
      const crd = await ext.readCustomResourceDefinition({ name });
      expect(crd.metadata?.annotations?.['gateway.networking.k8s.io/bundle-version']).toBe(gatewayApiVersion());
      expect(crd.metadata?.annotations?.['gateway.networking.k8s.io/channel']).toBe('standard');
      expect(crd.status?.conditions?.find((c) => c.type === 'Established')?.status).toBe('True');
    }
    // Installing again is a no-op, as test files that each need it do.
    expect(await installGatewayApi()).toEqual(crds);
  });

  it('stores a valid HTTPRoute with the defaults of its schema', async () => {
    const stored = (await create(
      route('web', [
        { name: 'web-ping', port: 80, weight: 100 },
        { name: 'web-pong', port: 80, weight: 0 },
      ]),
    )) as { metadata: { generation: number }; spec: { rules: Record<string, unknown>[] } };
    expect(stored.metadata.generation).toBe(1);
    // The API server applied the CRD's defaults: a rule without matches matches every path.
    expect(stored.spec.rules[0]?.matches).toEqual([{ path: { type: 'PathPrefix', value: '/' } }]);
    expect(stored.spec.rules[0]?.backendRefs).toEqual([
      { group: '', kind: 'Service', name: 'web-ping', port: 80, weight: 100 },
      { group: '', kind: 'Service', name: 'web-pong', port: 80, weight: 0 },
    ]);
  });

  it('rejects an HTTPRoute that breaks its schema or its CEL rules, naming the field', async () => {
    // OpenAPI bounds: a weight is 0..1000000.
    const negative = await rejection(route('negative', [{ name: 'web-ping', port: 80, weight: -1 }]));
    expect(negative).toMatch(/^422 /);
    expect(negative).toContain('spec.rules[0].backendRefs[0].weight');
    // A CEL rule of the CRD: a Service backend needs its port.
    const portless = await rejection(route('portless', [{ name: 'web-ping', weight: 1 }]));
    expect(portless).toMatch(/^422 /);
    expect(portless).toContain('Must have port for Service reference');
  });
});
