// The shape comes from the cluster, not from the pull request (issue #28 item 4):
// the preview's pod template is the parent's with only the listed Secrets
// reachable, no ServiceAccount token, and the small patch of spec.previews; and
// its Ingress or HTTPRoute, owned by the child, from the host template.
import { describe, expect, it } from 'vitest';
import { ANN_APPLIED } from '../../src/app/labels.ts';
import type { AppInput } from '../../src/app/schema.ts';
import { previewTemplate, volumeSecretNames } from '../../src/previews/template.ts';
import { observedChild, ofKind, parentApp, planFor, pullRequest } from '../fixtures/previews.ts';

type Json = Record<string, unknown>;

function withTemplate(input: AppInput): void {
  input.spec.template = {
    spec: {
      serviceAccountName: 'weather-admin',
      imagePullSecrets: [{ name: 'prod-pull' }, { name: 'preview-pull' }],
      containers: [
        {
          name: 'app',
          image: 'x',
          ports: [{ containerPort: 8080 }],
          env: [
            { name: 'DB', valueFrom: { secretKeyRef: { name: 'prod-db', key: 'url' } } },
            { name: 'FLAGS', valueFrom: { secretKeyRef: { name: 'preview-flags', key: 'all' } } },
            { name: 'MODE', value: 'production' },
            { name: 'KEEP', value: 'yes' },
          ],
          envFrom: [{ secretRef: { name: 'prod-env' } }, { configMapRef: { name: 'settings' } }],
          volumeMounts: [
            { name: 'prod-certs', mountPath: '/certs' },
            { name: 'mixed', mountPath: '/mixed' },
            { name: 'config', mountPath: '/config' },
          ],
          resources: { limits: { memory: '4Gi' } },
        },
        {
          name: 'sidecar',
          image: 'y',
          env: [{ name: 'TOKEN', valueFrom: { secretKeyRef: { name: 'prod-token', key: 't' } } }],
        },
      ],
      volumes: [
        { name: 'prod-certs', secret: { secretName: 'prod-tls' } },
        {
          name: 'mixed',
          projected: { sources: [{ secret: { name: 'prod-extra' } }, { configMap: { name: 'settings' } }] },
        },
        { name: 'config', configMap: { name: 'settings' } },
      ],
    },
  };
}

const app = parentApp((p, input) => {
  withTemplate(input);
  p.secrets = ['preview-flags', 'preview-pull'];
  p.templatePatch = { env: [{ name: 'MODE', value: 'preview' }], resources: { limits: { memory: '512Mi' } } };
});

function childTemplate() {
  const [create] = ofKind(planFor(app, [pullRequest(4)]), 'createChild');
  return create?.manifest.spec.template.spec as unknown as Json & { containers: Json[]; volumes: Json[] };
}

describe("a preview's pod template", () => {
  it('keeps only the Secrets listed in spec.previews.secrets: env, envFrom, volumes and their mounts, pull Secrets', () => {
    const spec = childTemplate();
    const [appContainer, sidecar] = spec.containers;
    expect(((appContainer?.env ?? []) as Json[]).map((e) => e.name)).toEqual(['FLAGS', 'KEEP', 'MODE']);
    expect(appContainer?.envFrom).toEqual([{ configMapRef: { name: 'settings' } }]);
    expect(appContainer?.volumeMounts).toEqual([{ name: 'config', mountPath: '/config' }]);
    expect(spec.volumes).toEqual([{ name: 'config', configMap: { name: 'settings' } }]);
    expect(sidecar?.env).toEqual([]);
    expect(spec.imagePullSecrets).toEqual([{ name: 'preview-pull' }]);
  });

  it("mounts no ServiceAccount token and does not run as the parent's ServiceAccount", () => {
    const spec = childTemplate();
    expect(spec.automountServiceAccountToken).toBe(false);
    expect(spec.serviceAccountName).toBeUndefined();
  });

  it("applies the patch over the app container: env by name, resources in place of the parent's", () => {
    const [appContainer] = childTemplate().containers;
    expect(((appContainer?.env ?? []) as Json[]).find((e) => e.name === 'MODE')).toEqual({
      name: 'MODE',
      value: 'preview',
    });
    expect(appContainer?.resources).toEqual({ limits: { memory: '512Mi' } });
  });

  it("leaves the parent's template as it was", () => {
    previewTemplate(app.spec.template, app.spec.previews ?? ({} as never));
    expect((app.spec.template.spec as Json).serviceAccountName).toBe('weather-admin');
  });

  it.each([
    [{ secret: { secretName: 'a' } }, ['a']],
    [{ projected: { sources: [{ secret: { name: 'b' } }] } }, ['b']],
    [{ csi: { driver: 'd', nodePublishSecretRef: { name: 'c' } } }, ['c']],
    [{ cephfs: { monitors: [], secretRef: { name: 'e' } } }, ['e']],
    [{ azureFile: { secretName: 'f', shareName: 's' } }, ['f']],
    [{ configMap: { name: 'g' } }, []],
  ])('finds the Secrets of the volume %j', (volume, names) => {
    expect(volumeSecretNames({ name: 'v', ...volume })).toEqual(names);
  });
});

describe("a preview's exposure", () => {
  const pr = pullRequest(4);
  const [create] = ofKind(planFor(app, [pr]), 'createChild');
  if (!create) throw new Error('no child');
  const child = observedChild(create.manifest);

  it('is an Ingress for the host, to the child active Service, owned by the child', () => {
    const [apply] = ofKind(planFor(app, [pr], { children: [child] }), 'applyExposure');
    expect(apply?.manifest).toMatchObject({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: 'weather-pr-4', namespace: 'team', ownerReferences: [{ uid: 'uid-weather-pr-4' }] },
      spec: {
        rules: [
          {
            host: 'pr-4.preview.example.com',
            http: { paths: [{ path: '/', backend: { service: { name: 'weather-pr-4', port: { name: 'http' } } } }] },
          },
        ],
      },
    });
  });

  it('waits for the child to exist (it owns it), and is not written again unchanged', () => {
    expect(ofKind(planFor(app, [pr]), 'applyExposure')).toEqual([]);
    const [apply] = ofKind(planFor(app, [pr], { children: [child] }), 'applyExposure');
    const applied = apply?.manifest.metadata.annotations[ANN_APPLIED];
    const seen = [{ kind: 'Ingress' as const, name: 'weather-pr-4', applied }];
    expect(ofKind(planFor(app, [pr], { children: [child], exposures: seen }), 'applyExposure')).toEqual([]);
  });

  it('is an HTTPRoute under the given Gateways when exposure.httpRoute is set', () => {
    const routed = parentApp((p, input) => {
      withTemplate(input);
      p.exposure = {
        scheme: 'https',
        httpRoute: { hostname: '{{name}}.apps.example.com', parentRefs: [{ name: 'gw', namespace: 'infra' }] },
      };
    });
    const [apply] = ofKind(planFor(routed, [pr], { children: [child] }), 'applyExposure');
    expect(apply?.manifest).toMatchObject({
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      spec: {
        parentRefs: [{ name: 'gw', namespace: 'infra' }],
        hostnames: ['weather-pr-4.apps.example.com'],
        rules: [{ backendRefs: [{ name: 'weather-pr-4', port: 80 }] }],
      },
    });
  });
});
