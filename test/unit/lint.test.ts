// The lint rules of an App's traffic set-up (src/rollout/lint.ts, and the
// load balancers it finds, src/rollout/load-balancers.ts), pure: each rule on
// Apps and objects that trigger it, one that is clean, and malformed values
// that become findings naming their field instead of exceptions.
import { describe, expect, it } from 'vitest';
import type { App, AppInput } from '../../src/app/schema.ts';
import { validateApp } from '../../src/app/validate.ts';
import { execSleepSeconds, hasWarnings, type LintInput, type Listed, lint } from '../../src/rollout/lint.ts';
import { parseStringMap } from '../../src/rollout/load-balancers.ts';
import { e2eApp } from '../fixtures/apps.ts';

type Container = Record<string, unknown>;
const PROBE = { readinessProbe: { httpGet: { path: '/ready', port: 8080 } } };

function app(container: Container = PROBE, podSpec: Record<string, unknown> = {}, name = 'web'): App {
  const input: AppInput = e2eApp(name, {
    spec: {
      template: { spec: { ...podSpec, containers: [{ name: 'app', ports: [{ containerPort: 8080 }], ...container }] } },
    },
  });
  const parsed = validateApp(input);
  if (!parsed.ok) throw new Error(parsed.errors.join('; '));
  return parsed.app;
}

/** The App with ping-pong slots switched through an HTTPRoute. */
function withSlots(a: App): App {
  a.spec.strategy.blueGreen.pingPong = { pingService: 'web-ping', pongService: 'web-pong' };
  a.spec.strategy.blueGreen.trafficRouting = { gatewayAPI: { httpRoute: 'web', rule: 0 } };
  return a;
}

const items = (...objects: object[]): Listed => ({ items: objects });
const NONE = items();

function input(a: App, parts: Partial<Omit<LintInput, 'app'>> = {}): LintInput {
  return { app: a, services: NONE, ingresses: NONE, ingressClasses: NONE, targetGroupBindings: NONE, ...parts };
}

const service = (name: string, annotations: Record<string, string> = {}) => ({ metadata: { name, annotations } });
const ingress = (name: string, backend: string, annotations: Record<string, string> = {}, className = 'alb') => ({
  metadata: { name, annotations },
  spec: {
    ingressClassName: className,
    rules: [
      {
        http: {
          paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: backend, port: { number: 80 } } } }],
        },
      },
    ],
  },
});
const IP = { 'alb.ingress.kubernetes.io/target-type': 'ip' };
const SAFE_SHUTDOWN = { lifecycle: { preStop: { sleep: { seconds: 40 } } } };

const rules = (i: LintInput) => lint(i).findings.map((f) => [f.rule, f.severity, f.object]);

describe('a clean App', () => {
  it('has a readiness probe and no pod-aware load balancer: no findings', () => {
    const report = lint(input(app(), { services: items(service('web'), service('web-preview')) }));
    expect(report.findings).toEqual([]);
    expect(report.drain).toBeUndefined();
    expect(hasWarnings(report)).toBe(false);
  });

  it('behind an ALB in instance mode (kube-proxy follows the switch): no findings', () => {
    const report = lint(input(app(), { ingresses: items(ingress('web', 'web')), services: items(service('web')) }));
    expect(report.findings).toEqual([]);
  });

  it('with slots, a pod-aware ALB on the ping and pong Services and a preStop longer than the drain: no findings', () => {
    const attrs = { 'alb.ingress.kubernetes.io/target-group-attributes': 'deregistration_delay.timeout_seconds=30' };
    const report = lint(
      input(withSlots(app({ ...PROBE, ...SAFE_SHUTDOWN }, { terminationGracePeriodSeconds: 60 })), {
        ingresses: items(
          ingress('ping', 'web-ping', { ...IP, ...attrs }),
          ingress('pong', 'web-pong', { ...IP, ...attrs }),
        ),
      }),
    );
    expect(report.findings).toEqual([]);
    expect(report.drain).toEqual({ seconds: 30, source: 'deregistration_delay.timeout_seconds=30 on Ingress/ping' });
    expect(report.loadBalancers.map((lb) => lb.service)).toEqual(['web-ping', 'web-pong']);
  });
});

describe('TEAL-PROBE-001', () => {
  it('warns when the app container has no readinessProbe, naming the container and field', () => {
    const [finding, ...rest] = lint(input(app({}))).findings;
    expect(rest).toEqual([]);
    expect(finding).toMatchObject({
      rule: 'TEAL-PROBE-001',
      severity: 'warning',
      object: 'App/web',
      field: 'spec.template.spec.containers[0].readinessProbe',
    });
    expect(finding?.message).toContain('container "app" has no readinessProbe');
  });

  it('reads the container named "app", not the first', () => {
    const a = app();
    a.spec.template.spec.containers.unshift({ name: 'sidecar' });
    expect(lint(input(a)).findings).toEqual([]);
  });
});

describe('TEAL-DRAIN-001', () => {
  it("warns when pods stop before an ALB's default drain (300 s), saying where the number comes from", () => {
    const report = lint(input(app(), { ingresses: items(ingress('web', 'web-preview', IP)) }));
    const drain = report.findings.find((f) => f.rule === 'TEAL-DRAIN-001');
    expect(report.drain).toEqual({
      seconds: 300,
      source: "AWS's default deregistration delay: Ingress/web sets no deregistration_delay.timeout_seconds",
    });
    expect(drain).toMatchObject({ severity: 'warning', object: 'App/web', field: 'spec.template.spec' });
    expect(drain?.message).toContain(
      'only 0s after their deletion (no preStop hook; terminationGracePeriodSeconds 30 (the default)',
    );
    expect(drain?.message).toContain('the 300s the load balancer drains them');
  });

  it("takes the Service's target-group-attributes over the Ingress's, as the controller does", () => {
    const report = lint(
      input(app({ ...PROBE, lifecycle: { preStop: { exec: { command: ['/bin/sh', '-c', 'sleep 20'] } } } }), {
        ingresses: items(
          ingress('web', 'web-preview', {
            ...IP,
            'alb.ingress.kubernetes.io/target-group-attributes': 'deregistration_delay.timeout_seconds=10',
          }),
        ),
        services: items(
          service('web-preview', {
            'alb.ingress.kubernetes.io/target-group-attributes':
              'stickiness.enabled=true,deregistration_delay.timeout_seconds=45',
          }),
        ),
      }),
    );
    expect(report.drain).toEqual({
      seconds: 45,
      source: 'deregistration_delay.timeout_seconds=45 on Service/web-preview',
    });
    const drain = report.findings.find((f) => f.rule === 'TEAL-DRAIN-001');
    expect(drain?.message).toContain('for only 20s after their deletion (preStop "sleep 20"');
  });

  it('counts the preStop hook inside the grace period: a hook longer than the grace is cut short', () => {
    const report = lint(
      input(
        app({ ...PROBE, lifecycle: { preStop: { sleep: { seconds: 90 } } } }, { terminationGracePeriodSeconds: 40 }),
        {
          drainSeconds: 60,
        },
      ),
    );
    const drain = report.findings.find((f) => f.rule === 'TEAL-DRAIN-001');
    expect(report.drain).toEqual({ seconds: 60, source: 'set by --drain' });
    expect(drain?.message).toContain(
      'for only 40s after their deletion (preStop sleep 90s; terminationGracePeriodSeconds 40, which cuts the hook short)',
    );
  });

  it('is quiet when the preStop hook covers the drain; --drain overrides the load balancers', () => {
    const safe = app({ ...PROBE, ...SAFE_SHUTDOWN }, { terminationGracePeriodSeconds: 50 });
    expect(rules(input(safe, { drainSeconds: 40 }))).toEqual([]);
    expect(rules(input(safe, { drainSeconds: 41 }))).toEqual([['TEAL-DRAIN-001', 'warning', 'App/web']]);
  });

  it('notes, without warning, a hook whose length it cannot tell, and a load balancer whose drain it cannot see', () => {
    const httpHook = app({ ...PROBE, lifecycle: { preStop: { httpGet: { path: '/stop', port: 8080 } } } });
    expect(rules(input(httpHook, { drainSeconds: 30 }))).toEqual([['TEAL-DRAIN-001', 'info', 'App/web']]);
    const neg = input(withSlots(app()), {
      services: items(service('web-ping', { 'cloud.google.com/neg': '{"ingress": true}' })),
    });
    const [note] = lint(neg).findings;
    expect(note).toMatchObject({ rule: 'TEAL-DRAIN-001', severity: 'info', object: 'Service/web-ping' });
    expect(note?.message).toContain('BackendConfig');
    expect(hasWarnings(lint(neg))).toBe(false);
  });

  it('reads `sleep N` as preStop hooks write it, and nothing else', () => {
    expect(execSleepSeconds(['sleep', '15'])).toBe(15);
    expect(execSleepSeconds(['/bin/sleep', '2.5'])).toBe(2.5);
    expect(execSleepSeconds(['sh', '-c', 'sleep 30'])).toBe(30);
    // sh -c's further words are its $0 and arguments, not the script.
    expect(execSleepSeconds(['sh', '-c', 'sleep 30', 'hook'])).toBe(30);
    expect(execSleepSeconds(['/bin/bash', '-c', ' sleep 5s '])).toBe(5);
    expect(execSleepSeconds(['sh', '-c', 'sleep 5 && kill 1'])).toBeUndefined();
    expect(execSleepSeconds(['nginx', '-s', 'quit'])).toBeUndefined();
    expect(execSleepSeconds('sleep 5')).toBeUndefined();
    expect(execSleepSeconds(['sleep', 5])).toBeUndefined();
  });
});

describe('TEAL-TRAFFIC-001', () => {
  const safe = () => app({ ...PROBE, ...SAFE_SHUTDOWN }, { terminationGracePeriodSeconds: 60 });

  it('warns for an ALB Ingress in IP mode on the active Service, saying why and what to do', () => {
    const report = lint(input(safe(), { ingresses: items(ingress('web', 'web', IP)), drainSeconds: 30 }));
    expect(report.findings).toHaveLength(1);
    const [finding] = report.findings;
    expect(finding).toMatchObject({ rule: 'TEAL-TRAFFIC-001', severity: 'warning', object: 'Ingress/web' });
    expect(finding?.message).toContain(
      'ALB Ingress web (target-type ip) targets the active Service web, which Teal switches by selector, and the App has no ping-pong slots',
    );
    expect(finding?.message).toContain(
      'did not match it when they were created, so the load balancer injected no readiness gate',
    );
    expect(finding?.fix).toContain('strategy.blueGreen.pingPong');
    expect(finding?.fix).toContain('strategy.blueGreen.trafficRouting');
  });

  it('finds the IP mode on the Service too, an App with another activeService, and an Ingress of the default ALB class', () => {
    const a = safe();
    a.spec.strategy.blueGreen.activeService = 'front';
    const classes = items({
      metadata: { name: 'aws', annotations: { 'ingressclass.kubernetes.io/is-default-class': 'true' } },
      spec: { controller: 'ingress.k8s.aws/alb' },
    });
    const noClass = ingress('web', 'front');
    delete (noClass.spec as { ingressClassName?: string }).ingressClassName;
    const report = lint(
      input(a, {
        ingresses: items(noClass),
        ingressClasses: classes,
        services: items(service('front', IP)),
        drainSeconds: 0,
      }),
    );
    expect(report.findings.map((f) => [f.rule, f.object])).toEqual([['TEAL-TRAFFIC-001', 'Ingress/web']]);
  });

  it('leaves out Ingresses of another controller', () => {
    const report = lint(input(safe(), { ingresses: items(ingress('web', 'web', IP, 'nginx')), drainSeconds: 0 }));
    expect(report.findings).toEqual([]);
  });

  it('warns for a TargetGroupBinding of type ip, a GKE NEG and an NLB in IP mode on the active Service', () => {
    const report = lint(
      input(safe(), {
        targetGroupBindings: items(
          { metadata: { name: 'web-tg' }, spec: { serviceRef: { name: 'web', port: 80 }, targetType: 'ip' } },
          { metadata: { name: 'nodes' }, spec: { serviceRef: { name: 'web', port: 80 }, targetType: 'instance' } },
        ),
        services: items(
          service('web', {
            'cloud.google.com/neg': '{"exposed_ports": {"80": {}}}',
            'service.beta.kubernetes.io/aws-load-balancer-nlb-target-type': 'ip',
          }),
        ),
        drainSeconds: 30,
      }),
    );
    expect(report.findings.map((f) => [f.rule, f.object])).toEqual([
      ['TEAL-TRAFFIC-001', 'TargetGroupBinding/web-tg'],
      ['TEAL-TRAFFIC-001', 'Service/web'],
      ['TEAL-TRAFFIC-001', 'Service/web'],
    ]);
    expect(report.findings.map((f) => f.message.split(' targets')[0])).toEqual([
      'TargetGroupBinding web-tg (targetType ip)',
      'GKE NEG of Service web',
      'NLB of Service web (target type ip)',
    ]);
  });

  it("warns for a readiness gate of the test harness's load balancer model that the template names, without slots only", () => {
    const gate = { readinessGates: [{ conditionType: 'target-health.lb-model.teal.dev/edge' }] };
    const a = app({ ...PROBE, ...SAFE_SHUTDOWN }, { terminationGracePeriodSeconds: 60, ...gate });
    const report = lint(input(a));
    // Its drain is not in the cluster: a note, not a made-up number.
    expect(report.findings.map((f) => [f.rule, f.severity])).toEqual([
      ['TEAL-DRAIN-001', 'info'],
      ['TEAL-TRAFFIC-001', 'warning'],
    ]);
    const finding = report.findings[1];
    expect(finding).toMatchObject({ rule: 'TEAL-TRAFFIC-001', object: 'App/web' });
    expect(finding?.message).toContain(
      "the test harness's load balancer model (the pod template names its readiness gate target-health.lb-model.teal.dev/edge)",
    );
    const slotted = withSlots(app({ ...PROBE, ...SAFE_SHUTDOWN }, { terminationGracePeriodSeconds: 60, ...gate }));
    expect(rules(input(slotted)).filter(([rule]) => rule === 'TEAL-TRAFFIC-001')).toEqual([]);
  });

  it('finds a load balancer by a gate the drain-verified switch waits for, once however often it is named', () => {
    const a = app(
      { ...PROBE, ...SAFE_SHUTDOWN },
      {
        terminationGracePeriodSeconds: 60,
        readinessGates: [{ conditionType: 'target-health.elbv2.k8s.aws/web-tg' }],
      },
    );
    a.spec.strategy.blueGreen.switch = {
      readinessGates: [
        'target-health.elbv2.k8s.aws/web-tg',
        'cloud.google.com/load-balancer-neg-ready',
        'example.com/ready',
      ],
      timeoutSeconds: 300,
    };
    const report = lint(input(a, { drainSeconds: 30 }));
    expect(report.loadBalancers.map((lb) => lb.what)).toEqual([
      'a load balancer of the AWS Load Balancer Controller (the pod template names its readiness gate target-health.elbv2.k8s.aws/web-tg)',
      'a GKE load balancer through a NEG (strategy.blueGreen.switch.readinessGates names its readiness gate cloud.google.com/load-balancer-neg-ready)',
    ]);
    expect(rules(input(a, { drainSeconds: 30 }))).toEqual([
      ['TEAL-TRAFFIC-001', 'warning', 'App/web'],
      ['TEAL-TRAFFIC-001', 'warning', 'App/web'],
    ]);
    // The TargetGroupBinding of that gate, once read, is the load balancer itself.
    const bound = input(a, {
      drainSeconds: 30,
      targetGroupBindings: items({
        metadata: { name: 'web-tg' },
        spec: { serviceRef: { name: 'web' }, targetType: 'ip' },
      }),
    });
    expect(lint(bound).loadBalancers.map((lb) => lb.object)).toEqual(['TargetGroupBinding/web-tg', 'App/web']);
  });

  it('with slots, still warns for a load balancer left on the active Service, naming the slots', () => {
    const report = lint(input(withSlots(safe()), { ingresses: items(ingress('web', 'web', IP)), drainSeconds: 0 }));
    expect(report.findings).toHaveLength(1);
    expect(report.findings[0]?.message).not.toContain('no ping-pong slots');
    expect(report.findings[0]?.fix).toBe(
      'point it at the ping and pong Services (web-ping, web-pong), which keep their selectors, instead of web',
    );
  });
});

describe('TEAL-INPUT-001: a value that cannot be read is a finding, never an exception', () => {
  const safe = () => app({ ...PROBE, ...SAFE_SHUTDOWN }, { terminationGracePeriodSeconds: 60 });
  const inputs = (found: LintInput) => lint(found).findings.filter((f) => f.rule === 'TEAL-INPUT-001');

  it.each([
    [
      'deregistration_delay.timeout_seconds=soon',
      'deregistration_delay.timeout_seconds=soon: it must be a whole number',
    ],
    ['deregistration_delay.timeout_seconds=4000', 'from 0 to 3600'],
    ['deregistration_delay.timeout_seconds=-1', 'whole number'],
    ['stickiness.enabled', '"stickiness.enabled" is not key=value'],
  ])('a target-group-attributes of %j', (value, problem) => {
    const found = input(safe(), {
      ingresses: items(
        ingress('web', 'web-preview', { ...IP, 'alb.ingress.kubernetes.io/target-group-attributes': value }),
      ),
    });
    const [finding, ...rest] = inputs(found);
    expect(rest).toEqual([]);
    expect(finding).toMatchObject({
      severity: 'warning',
      object: 'Ingress/web',
      field: 'metadata.annotations["alb.ingress.kubernetes.io/target-group-attributes"]',
    });
    expect(finding?.message).toContain(problem);
    // Its drain is unknown, so the pods are not held against a made-up number.
    expect(lint(found).drain).toBeUndefined();
  });

  it('a target type, a NEG annotation and a TargetGroupBinding targetType that cannot be read', () => {
    const found = input(safe(), {
      ingresses: items(ingress('web', 'web', { 'alb.ingress.kubernetes.io/target-type': 'pods' })),
      services: items(service('web-preview', { 'cloud.google.com/neg': '{ingress: true' })),
      targetGroupBindings: items({ metadata: { name: 'tg' }, spec: { serviceRef: { name: 'web' } } }),
    });
    expect(inputs(found).map((f) => [f.object, f.field, f.message])).toEqual([
      [
        'Ingress/web',
        'metadata.annotations["alb.ingress.kubernetes.io/target-type"]',
        expect.stringContaining('"pods" is neither ip nor instance'),
      ],
      [
        'TargetGroupBinding/tg',
        'spec.targetType',
        expect.stringContaining('not set: the controller takes it from the AWS target group'),
      ],
      ['Service/web-preview', 'metadata.annotations["cloud.google.com/neg"]', expect.stringContaining('not JSON')],
    ]);
  });

  it.each([
    [{ terminationGracePeriodSeconds: 'long' }, {}, 'spec.template.spec.terminationGracePeriodSeconds'],
    [{ readinessGates: 'target-health.lb-model.teal.dev/edge' }, {}, 'spec.template.spec.readinessGates'],
    [{}, { lifecycle: 'stop' }, 'spec.template.spec.containers[0].lifecycle'],
    [
      {},
      { lifecycle: { preStop: { sleep: { seconds: '5' } } } },
      'spec.template.spec.containers[0].lifecycle.preStop.sleep.seconds',
    ],
  ])('a pod template value: %j %j', (podSpec, container, field) => {
    const found = input(app({ ...PROBE, ...container }, podSpec), { drainSeconds: 10 });
    expect(inputs(found).map((f) => [f.object, f.field])).toEqual([['App/web', field]]);
  });

  it('objects of any shape: no exception, no finding', () => {
    const junk = [
      {},
      { metadata: null },
      { metadata: { name: 7, annotations: 'x' } },
      { spec: { rules: 'x' } },
      { spec: { rules: [null, { http: { paths: [1] } }] } },
    ];
    expect(() =>
      lint(input(safe(), { ingresses: items(...junk), services: items(...junk), targetGroupBindings: items(...junk) })),
    ).not.toThrow();
    expect(
      lint(input(safe(), { ingresses: items(...junk), services: items(...junk), targetGroupBindings: items(...junk) }))
        .findings,
    ).toEqual([]);
  });

  it('reads AWS stringMaps whole', () => {
    expect(parseStringMap(' a=1, b = x=y ,')).toEqual(
      new Map([
        ['a', '1'],
        ['b', 'x=y'],
      ]),
    );
    expect(parseStringMap('a=1,=2')).toBe('"=2" is not key=value');
  });
});

describe('TEAL-READ-001', () => {
  it('notes each list it could not read, and is not a warning', () => {
    const report = lint(
      input(app(), {
        targetGroupBindings: { unreadable: 'targetgroupbindings.elbv2.k8s.aws is not installed in this cluster' },
        ingresses: { unreadable: 'user "u" cannot list ingresses.networking.k8s.io' },
      }),
    );
    expect(report.findings.map((f) => [f.rule, f.severity, f.message])).toEqual([
      [
        'TEAL-READ-001',
        'info',
        'not checked: cannot read ingresses.networking.k8s.io: user "u" cannot list ingresses.networking.k8s.io',
      ],
      [
        'TEAL-READ-001',
        'info',
        'not checked: cannot read targetgroupbindings.elbv2.k8s.aws: targetgroupbindings.elbv2.k8s.aws is not installed in this cluster',
      ],
    ]);
    expect(hasWarnings(report)).toBe(false);
  });

  it('notes unread IngressClasses only when an Ingress in front of the App is not plainly of class alb', () => {
    const unreadable = { unreadable: 'forbidden' };
    expect(rules(input(app(), { ingressClasses: unreadable, ingresses: items(ingress('web', 'web')) }))).toEqual([]);
    expect(
      rules(input(app(), { ingressClasses: unreadable, ingresses: items(ingress('web', 'web', {}, 'edge')) })),
    ).toEqual([['TEAL-READ-001', 'info', 'ingressclasses.networking.k8s.io']]);
  });
});
