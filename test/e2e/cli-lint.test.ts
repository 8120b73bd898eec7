// `kubectl teal lint APP` end to end: the real kubectl runs the plugin (its
// bundle, its sources and its single executable, as test/e2e/cli.test.ts does) against Apps,
// Services, Ingresses and TargetGroupBindings stored in the real API server,
// which validates them, and a ServiceAccount's own token meets its RBAC. No
// operator runs: lint reads what the user wrote. The TargetGroupBinding CRD is
// a stand-in of the AWS controller's (test/fixtures/targetgroupbinding-crd.yaml),
// absent at first so lint meets the API server's 404 for it.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import type { AppInput } from '../../src/app/schema.ts';
import { e2eApp } from '../fixtures/apps.ts';
import { createApp } from '../support/apps.ts';
import {
  buildStandalone,
  CLI_FROM,
  type CliFrom,
  type CliResult,
  completeTeal,
  teal as runTeal,
} from '../support/cli.ts';
import { clients, createNamespace, kubectl, tokenKubeconfig, waitFor } from '../support/kube.ts';
import { serviceAccount } from '../support/users.ts';

const TGB_CRD = readFileSync(new URL('../fixtures/targetgroupbinding-crd.yaml', import.meta.url), 'utf8');
const TGB_CRD_NAME = 'targetgroupbindings.elbv2.k8s.aws';
const { core, custom } = clients();

interface Report {
  name: string;
  namespace: string;
  exitCode: number;
  drain?: { seconds: number; source: string };
  findings: { rule: string; severity: string; object: string; field?: string; message: string; fix?: string }[];
}

const PROBE = { readinessProbe: { httpGet: { path: '/ready', port: 8080 } } };
/** A shutdown that outlasts a 30 s drain: preStop sleeps 40 s within a 60 s grace period. */
const SAFE_SHUTDOWN = { lifecycle: { preStop: { sleep: { seconds: 40 } } } };

function lintedApp(name: string, container: Record<string, unknown>, podSpec: Record<string, unknown> = {}): AppInput {
  return e2eApp(name, {
    spec: {
      template: { spec: { ...podSpec, containers: [{ name: 'app', ports: [{ containerPort: 8080 }], ...container }] } },
    },
  });
}

/** An Ingress of class alb whose one path goes to the Service, with these annotations. */
async function albIngress(namespace: string, name: string, service: string, annotations: Record<string, string>) {
  await custom.createNamespacedCustomObject({
    group: 'networking.k8s.io',
    version: 'v1',
    plural: 'ingresses',
    namespace,
    body: {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name, annotations },
      spec: {
        ingressClassName: 'alb',
        rules: [
          {
            http: {
              paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: service, port: { number: 80 } } } }],
            },
          },
        ],
      },
    },
  });
}

/** A Service as a user makes it before Teal adopts it (Teal then manages only its selector). */
async function userService(namespace: string, name: string, annotations: Record<string, string>) {
  await core.createNamespacedService({
    namespace,
    body: { metadata: { name, annotations }, spec: { selector: { app: name }, ports: [{ port: 80 }] } },
  });
}

async function removeTgbCrd(): Promise<void> {
  await kubectl(['delete', 'crd', TGB_CRD_NAME, '--ignore-not-found', '--wait=true']);
}

async function installTgbCrd(): Promise<void> {
  const applied = await kubectl(['apply', '--server-side', '-f', '-'], TGB_CRD);
  expect(applied.code, applied.stderr).toBe(0);
  const established = await kubectl(['wait', '--for=condition=Established', `crd/${TGB_CRD_NAME}`]);
  expect(established.code, established.stderr).toBe(0);
}

describe.each(CLI_FROM)('kubectl teal lint, run from the %s', (from: CliFrom) => {
  let ns: string;
  let removeNs: () => Promise<void>;
  let root: string;

  const teal = (args: string[], kubeconfig = inject('kubeconfig')): Promise<CliResult> =>
    runTeal(args, kubeconfig, from);
  const lint = (...args: string[]) => teal(['lint', ...args, '-n', ns]);
  const lintJson = async (...args: string[]): Promise<{ result: CliResult; report: Report }> => {
    const result = await lint(...args, '-o', 'json');
    return { result, report: JSON.parse(result.stdout) as Report };
  };
  const rulesOf = (report: Report) => report.findings.map((f) => [f.rule, f.severity, f.object]);

  beforeAll(async () => {
    ({ name: ns, remove: removeNs } = await createNamespace('lint'));
    root = await mkdtemp(join(tmpdir(), 'teal-lint-'));
    if (from === 'standalone') await buildStandalone();
    // A run before this one (the other place the plugin runs from) left it installed.
    await removeTgbCrd();
  });

  afterAll(async () => {
    await removeNs?.();
    if (root) await rm(root, { recursive: true, force: true });
    await removeTgbCrd();
  });

  it('is a command of the plugin: help, completion, and exit code 2 on a usage error or a missing App', async () => {
    const help = await teal(['lint', '--help']);
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toContain('kubectl teal lint APP [--drain DURATION] [flags]');
    const offered = await completeTeal(['lin'], inject('kubeconfig'), from);
    expect(offered.values, offered.stderr).toEqual(['lint']);
    const flags = await completeTeal(['lint', 'web', '--dr'], inject('kubeconfig'), from);
    expect(flags.values, flags.stderr).toEqual(['--drain']);

    const unitless = await lint('web', '--drain', '30');
    expect(unitless.code).toBe(2);
    expect(unitless.stderr).toContain('error: --drain: invalid duration "30" (no unit: 30s is 30 seconds)');
    const missing = await lint('nope');
    expect(missing.code).toBe(2);
    expect(missing.stderr.trim()).toBe(`error: App "nope" not found in namespace "${ns}"`);
  });

  it('finds nothing in a clean App (exit 0), and notes that the TargetGroupBinding CRD is not installed', async () => {
    await createApp(ns, lintedApp('clean', PROBE));
    const text = await lint('clean');
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(`App "clean" in namespace "${ns}"`);
    expect(text.stdout).toMatch(/^info\s+TEAL-READ-001\s+targetgroupbindings\.elbv2\.k8s\.aws$/m);
    expect(text.stdout).toContain(
      'not checked: cannot read targetgroupbindings.elbv2.k8s.aws: targetgroupbindings.elbv2.k8s.aws is not installed in this cluster',
    );
    expect(text.stdout.trimEnd().split('\n').at(-1)).toBe('0 warnings, 1 note.');
    const { result, report } = await lintJson('clean');
    expect(result.code).toBe(0);
    expect(report).toMatchObject({ name: 'clean', namespace: ns, exitCode: 0 });
    expect(rulesOf(report)).toEqual([['TEAL-READ-001', 'info', TGB_CRD_NAME]]);
  });

  it('warns of an App without a readiness probe (TEAL-PROBE-001, exit 1), as text and YAML', async () => {
    await createApp(ns, lintedApp('unprobed', {}));
    const text = await lint('unprobed');
    expect(text.code, text.stderr).toBe(1);
    expect(text.stdout).toMatch(
      /^warning\s+TEAL-PROBE-001\s+App\/unprobed\s+spec\.template\.spec\.containers\[0\]\.readinessProbe$/m,
    );
    expect(text.stdout).toContain('container "app" has no readinessProbe');
    const yaml = await lint('unprobed', '-o', 'yaml');
    expect(yaml.code).toBe(1);
    const report = parseYaml(yaml.stdout) as Report;
    expect(report.exitCode).toBe(1);
    expect(rulesOf(report).filter(([rule]) => rule !== 'TEAL-READ-001')).toEqual([
      ['TEAL-PROBE-001', 'warning', 'App/unprobed'],
    ]);
  });

  it('warns of a pod-aware ALB on the active Service (TEAL-TRAFFIC-001) and pods that stop before its default 300 s drain (TEAL-DRAIN-001)', async () => {
    await createApp(ns, lintedApp('alb', PROBE));
    await albIngress(ns, 'alb', 'alb', { 'alb.ingress.kubernetes.io/target-type': 'ip' });
    const { result, report } = await lintJson('alb');
    expect(result.code, result.stderr).toBe(1);
    expect(report.drain).toEqual({
      seconds: 300,
      source: "AWS's default deregistration delay: Ingress/alb sets no deregistration_delay.timeout_seconds",
    });
    const drain = report.findings.find((f) => f.rule === 'TEAL-DRAIN-001');
    expect(drain).toMatchObject({ severity: 'warning', object: 'App/alb' });
    expect(drain?.message).toContain('only 0s after their deletion (no preStop hook; terminationGracePeriodSeconds 30');
    const traffic = report.findings.find((f) => f.rule === 'TEAL-TRAFFIC-001');
    expect(traffic).toMatchObject({ severity: 'warning', object: 'Ingress/alb' });
    expect(traffic?.message).toContain(
      'ALB Ingress alb (target-type ip) targets the active Service alb, which Teal switches by selector, and the App has no ping-pong slots',
    );
    expect(traffic?.message).toContain('injected no readiness gate');
    expect(traffic?.fix).toContain('strategy.blueGreen.pingPong');
  });

  it("reads the drain from the Service's target-group-attributes, and --drain overrides it", async () => {
    await createApp(ns, lintedApp('drained', { ...PROBE, ...SAFE_SHUTDOWN }, { terminationGracePeriodSeconds: 60 }));
    await userService(ns, 'drained-preview', {
      'alb.ingress.kubernetes.io/target-type': 'ip',
      'alb.ingress.kubernetes.io/target-group-attributes': 'deregistration_delay.timeout_seconds=30',
    });
    // Behind the preview Service: the drain applies, the switch finding does not.
    await albIngress(ns, 'drained', 'drained-preview', {});
    const ok = await lintJson('drained');
    expect(ok.result.code, ok.result.stderr).toBe(0);
    expect(ok.report.drain).toEqual({
      seconds: 30,
      source: 'deregistration_delay.timeout_seconds=30 on Service/drained-preview',
    });
    const longer = await lintJson('drained', '--drain', '1m');
    expect(longer.result.code).toBe(1);
    expect(longer.report.drain).toEqual({ seconds: 60, source: 'set by --drain' });
    expect(rulesOf(longer.report)).toContainEqual(['TEAL-DRAIN-001', 'warning', 'App/drained']);
  });

  it('finds nothing wrong with ALBs on the ping and pong Services of an App with slots; one left on the active Service names them', async () => {
    const slotted = lintedApp('slotted', { ...PROBE, ...SAFE_SHUTDOWN }, { terminationGracePeriodSeconds: 60 });
    slotted.spec.strategy = {
      blueGreen: {
        ...slotted.spec.strategy?.blueGreen,
        pingPong: { pingService: 'slotted-ping', pongService: 'slotted-pong' },
        trafficRouting: { gatewayAPI: { httpRoute: 'slotted' } },
      },
    };
    await createApp(ns, slotted);
    const attributes = {
      'alb.ingress.kubernetes.io/target-type': 'ip',
      'alb.ingress.kubernetes.io/target-group-attributes': 'deregistration_delay.timeout_seconds=30',
    };
    await albIngress(ns, 'slotted-ping', 'slotted-ping', attributes);
    await albIngress(ns, 'slotted-pong', 'slotted-pong', attributes);
    const clean = await lintJson('slotted');
    expect(clean.result.code, clean.result.stderr).toBe(0);
    expect(rulesOf(clean.report).filter(([rule]) => rule !== 'TEAL-READ-001')).toEqual([]);
    expect(clean.report.drain).toEqual({
      seconds: 30,
      source: 'deregistration_delay.timeout_seconds=30 on Ingress/slotted-ping',
    });

    await albIngress(ns, 'slotted', 'slotted', attributes);
    const left = await lintJson('slotted');
    expect(left.result.code).toBe(1);
    const traffic = left.report.findings.filter((f) => f.rule === 'TEAL-TRAFFIC-001');
    expect(traffic.map((f) => [f.object, f.fix])).toEqual([
      [
        'Ingress/slotted',
        'point it at the ping and pong Services (slotted-ping, slotted-pong), which keep their selectors, instead of slotted',
      ],
    ]);
  });

  it('gives a malformed annotation as a finding naming its object and field, never a crash', async () => {
    await createApp(ns, lintedApp('malformed', PROBE));
    await albIngress(ns, 'malformed', 'malformed', {
      'alb.ingress.kubernetes.io/target-type': 'ip',
      'alb.ingress.kubernetes.io/target-group-attributes': 'deregistration_delay.timeout_seconds=soon',
    });
    await userService(ns, 'malformed-preview', { 'cloud.google.com/neg': '{ingress: true' });
    const { result, report } = await lintJson('malformed');
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toBe('');
    const inputs = report.findings.filter((f) => f.rule === 'TEAL-INPUT-001').map((f) => [f.object, f.field]);
    expect(inputs).toEqual([
      ['Ingress/malformed', 'metadata.annotations["alb.ingress.kubernetes.io/target-group-attributes"]'],
      ['Service/malformed-preview', 'metadata.annotations["cloud.google.com/neg"]'],
    ]);
    // The drain it cannot read is not replaced by a default.
    expect(report.drain).toBeUndefined();
  });

  it("warns of a GKE NEG on the active Service, and of the test harness's load balancer gate in the template or the switch", async () => {
    await createApp(ns, lintedApp('neg', { ...PROBE, ...SAFE_SHUTDOWN }, { terminationGracePeriodSeconds: 60 }));
    await userService(ns, 'neg', { 'cloud.google.com/neg': '{"ingress": true}' });
    const neg = await lintJson('neg', '--drain', '30s');
    expect(neg.result.code, neg.result.stderr).toBe(1);
    expect(rulesOf(neg.report).filter(([rule]) => rule !== 'TEAL-READ-001')).toEqual([
      ['TEAL-TRAFFIC-001', 'warning', 'Service/neg'],
    ]);

    const gate = { readinessGates: [{ conditionType: 'target-health.lb-model.teal.dev/edge' }] };
    await createApp(
      ns,
      lintedApp('gated', { ...PROBE, ...SAFE_SHUTDOWN }, { terminationGracePeriodSeconds: 60, ...gate }),
    );
    const gated = await lintJson('gated', '--drain', '30s');
    expect(gated.result.code, gated.result.stderr).toBe(1);
    expect(rulesOf(gated.report).filter(([rule]) => rule !== 'TEAL-READ-001')).toEqual([
      ['TEAL-TRAFFIC-001', 'warning', 'App/gated'],
    ]);
    expect(gated.report.findings.find((f) => f.rule === 'TEAL-TRAFFIC-001')?.message).toContain(
      'target-health.lb-model.teal.dev/edge',
    );

    // The gate a drain-verified switch waits for marks the load balancer too.
    const verified = lintedApp('verified', { ...PROBE, ...SAFE_SHUTDOWN }, { terminationGracePeriodSeconds: 60 });
    verified.spec.strategy = {
      blueGreen: {
        ...verified.spec.strategy?.blueGreen,
        switch: { readinessGates: ['target-health.lb-model.teal.dev/edge'] },
      },
    };
    await createApp(ns, verified);
    const switched = await lintJson('verified', '--drain', '30s');
    expect(switched.result.code, switched.result.stderr).toBe(1);
    const traffic = switched.report.findings.filter((f) => f.rule === 'TEAL-TRAFFIC-001');
    expect(traffic.map((f) => f.object)).toEqual(['App/verified']);
    expect(traffic[0]?.message).toContain(
      "the test harness's load balancer model (strategy.blueGreen.switch.readinessGates names its readiness gate target-health.lb-model.teal.dev/edge)",
    );
  });

  it('reads TargetGroupBindings once their CRD is installed: one of type ip on the active Service is a finding', async () => {
    await installTgbCrd();
    await createApp(ns, lintedApp('bound', { ...PROBE, ...SAFE_SHUTDOWN }, { terminationGracePeriodSeconds: 60 }));
    const body = (name: string, targetType: string) => ({
      apiVersion: 'elbv2.k8s.aws/v1beta1',
      kind: 'TargetGroupBinding',
      metadata: { name },
      spec: {
        serviceRef: { name: 'bound', port: 80 },
        targetType,
        targetGroupARN: `arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/${name}/0123456789abcdef`,
      },
    });
    // The new resource reaches the API server's discovery a moment after Established: create once it takes.
    await waitFor('a TargetGroupBinding to be created', async () =>
      custom
        .createNamespacedCustomObject({
          group: 'elbv2.k8s.aws',
          version: 'v1beta1',
          plural: 'targetgroupbindings',
          namespace: ns,
          body: body('bound-ip', 'ip'),
        })
        .then(() => true),
    );
    await custom.createNamespacedCustomObject({
      group: 'elbv2.k8s.aws',
      version: 'v1beta1',
      plural: 'targetgroupbindings',
      namespace: ns,
      body: body('bound-nodes', 'instance'),
    });
    const { result, report } = await lintJson('bound');
    expect(result.code, result.stderr).toBe(1);
    expect(rulesOf(report)).toEqual([
      ['TEAL-DRAIN-001', 'warning', 'App/bound'],
      ['TEAL-TRAFFIC-001', 'warning', 'TargetGroupBinding/bound-ip'],
    ]);
    expect(report.drain?.source).toContain(
      "TargetGroupBinding/bound-ip's target group is configured outside the cluster",
    );
    // Told the target group's delay, lint holds the pods against it instead.
    const told = await lintJson('bound', '--drain', '30s');
    expect(rulesOf(told.report)).toEqual([['TEAL-TRAFFIC-001', 'warning', 'TargetGroupBinding/bound-ip']]);
  });

  it('notes what a user may not read instead of failing, and still checks the App', async () => {
    // May read Apps, nothing else.
    const token = await serviceAccount(ns, `reader-${from}`, ['get']);
    const kubeconfig = await tokenKubeconfig(join(root, 'reader.kubeconfig'), 'reader', token, ns);
    const result = await teal(['lint', 'unprobed', '-o', 'json'], kubeconfig);
    expect(result.code, result.stderr).toBe(1);
    const report = JSON.parse(result.stdout) as Report;
    expect(rulesOf(report)).toEqual([
      ['TEAL-PROBE-001', 'warning', 'App/unprobed'],
      ['TEAL-READ-001', 'info', 'services'],
      ['TEAL-READ-001', 'info', 'ingresses.networking.k8s.io'],
      ['TEAL-READ-001', 'info', TGB_CRD_NAME],
    ]);
    const services = report.findings.find((f) => f.object === 'services');
    expect(services?.message).toMatch(
      /^not checked: cannot read services: user "system:serviceaccount:.+" cannot list services/,
    );
  });
});
