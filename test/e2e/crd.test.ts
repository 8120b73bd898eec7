// The generated CRD on the real API server: accepted, structural, defaulting,
// and rejecting bad Apps with messages that name the field.
import { readFileSync } from 'node:fs';
import { ApiException } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { GROUP, PLURAL, VERSION } from '../../src/app/schema.ts';
import { gitApp, imageApp, invalidApps, previewsApp } from '../fixtures/apps.ts';
import { hostilePullRequests, parentApp, rounds } from '../fixtures/previews.ts';
import { clients, createNamespace, kubectl, waitFor } from '../support/kube.ts';

const { ext, custom } = clients();
const crdPath = new URL('../../config/crd/teal.dev_apps.yaml', import.meta.url);
let ns: string;
let removeNs: () => Promise<void>;

beforeAll(async () => {
  const applied = await kubectl(['apply', '--server-side', '-f', crdPath.pathname]);
  expect(applied.stderr).toBe('');
  await waitFor('the CRD to be established', async () => {
    const crd = await ext.readCustomResourceDefinition({ name: `${PLURAL}.${GROUP}` });
    return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ? crd : undefined;
  });
  ({ name: ns, remove: removeNs } = await createNamespace('crd'));
});
afterAll(async () => removeNs());

const create = (body: unknown) =>
  custom.createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace: ns,
    plural: PLURAL,
    body,
    fieldValidation: 'Strict',
  });

describe('the App CRD on the API server', () => {
  it('is accepted as structural, with no NonStructuralSchema condition', async () => {
    const crd = await ext.readCustomResourceDefinition({ name: `${PLURAL}.${GROUP}` });
    expect(crd.status?.conditions?.find((c) => c.type === 'NonStructuralSchema')).toBeUndefined();
    expect(crd.spec.versions[0]?.subresources?.status).toEqual({});
    expect(parse(readFileSync(crdPath, 'utf8')).spec.names.kind).toBe('App');
  });

  it('stores an image App with the schema defaults applied by the API server', async () => {
    const stored = (await create(imageApp('defaults'))) as { spec: Record<string, unknown> & { strategy: unknown } };
    expect(stored.spec.strategy).toEqual({
      blueGreen: {
        autoPromotionEnabled: true,
        autoPromotionSeconds: 0,
        scaleDownDelaySeconds: 30,
        abortScaleDownDelaySeconds: 30,
      },
    });
    expect(stored.spec).toMatchObject({ revisionHistoryLimit: 5, progressDeadlineSeconds: 600, paused: false });
  });

  it('stores a git App with a slash in its branch and fills the source and build defaults', async () => {
    const stored = (await create(gitApp('from-git'))) as { spec: { source: unknown; build: unknown } };
    expect(stored.spec.source).toMatchObject({ git: { ref: 'feature/new-ui', path: '.', pollInterval: '60s' } });
    expect(stored.spec.build).toMatchObject({ dockerfile: 'Dockerfile', engine: 'buildkit', timeout: '15m' });
  });

  it('shows the printer columns in kubectl get', async () => {
    const { stdout } = await kubectl(['get', 'apps.teal.dev', '-n', ns]);
    expect(stdout.split('\n')[0]?.split(/\s+/)).toEqual(['NAME', 'PHASE', 'ACTIVE', 'PREVIEW', 'COMMIT', 'AGE']);
  });

  it('explains its fields through kubectl explain', async () => {
    const { stdout } = await kubectl(['explain', 'apps.teal.dev.spec.source.git.pollInterval']);
    expect(stdout).toMatch(/webhooks only/);
  });

  it.each(invalidApps)('rejects $title with a message naming $field', async ({ app, field, message }) => {
    const body = app() as { metadata: { name: string } };
    if (body.metadata.name === 'weather') body.metadata.name = `bad-${Math.random().toString(36).slice(2, 8)}`;
    const err = await create(body).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ApiException);
    const status = err as ApiException<string>;
    // Schema violations are 422 Invalid; unknown fields under strict field validation are 400.
    expect(status.code).toBe(field === 'spec.replica' ? 400 : 422);
    const reply = JSON.parse(status.body) as { message: string };
    const line = reply.message.split('\n').find((l) => l.includes(field));
    expect(line, reply.message).toBeDefined();
    expect(line).toMatch(message);
    const names = (await custom.listNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: PLURAL,
    })) as {
      items: { metadata: { name: string } }[];
    };
    expect(names.items.map((i) => i.metadata.name)).not.toContain(body.metadata.name);
  });
});

describe('status.previews on the API server (issue #28: it always fits in the App)', () => {
  /** Bytes as the API server stores them: Go's encoding/json writes "<", ">", "&" as \\u003c, U+2028/9 as \\u2028. */
  const asStored = (value: unknown): number => {
    const json = JSON.stringify(value);
    const escaped = (json.match(/[<>&]/g)?.length ?? 0) * 5 + (json.match(/[\u2028\u2029]/g)?.length ?? 0) * 3;
    return Buffer.byteLength(json, 'utf8') + escaped;
  };

  it("accepts the planner's worst case through the status subresource: 1,100 hostile pull requests at the maxima", async () => {
    // The planner's own output after four rounds: 40 children failing with a 4 KiB hostile log, 1,060 forks
    // awaiting approval, every title, page and message at the schema maxima, every write accepted.
    const plans = rounds(
      parentApp(),
      hostilePullRequests(1100, (n) => n > 40),
      4,
    );
    const previews = plans.at(-1)?.status;
    expect(previews?.pullRequests?.length).toBeGreaterThan(100);
    const body = previewsApp('worst-case');
    const created = (await create(body)) as Record<string, unknown>;
    const written = (await custom.replaceNamespacedCustomObjectStatus({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: PLURAL,
      name: 'worst-case',
      body: { ...created, status: { previews } },
    })) as { status?: { previews?: unknown } };
    expect(written.status?.previews).toEqual(previews);
    const stored = (await custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: PLURAL,
      name: 'worst-case',
    })) as { status?: { previews?: unknown } };
    expect(stored.status?.previews).toEqual(previews);
    // The whole App (spec, status, managedFields) stays well under etcd's 1.5 MiB.
    expect(asStored(stored.status?.previews)).toBeLessThanOrEqual(256 * 1024);
    expect(asStored(stored)).toBeLessThan(768 * 1024);
  });
});
