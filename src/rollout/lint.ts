// The lint of an App's traffic set-up (issue #26 item 2.5): what makes a
// blue/green switch, or any pod's deletion, drop requests, judged from the App
// and the objects around it. Pure: `kubectl teal lint` reads the objects
// (src/cli/commands/lint.ts); the dashboard or the API may call lint() with
// what they hold. Each finding carries a stable rule id (LINT_RULES), so
// scripts and docs can rely on it. Every value read is input: a value that
// cannot be read is a finding naming its object and field.
import type { App } from '../app/schema.ts';
import {
  albIngresses,
  type Drain,
  type Found,
  gateLbs,
  ingressServices,
  isAlbIngress,
  type KubeObject,
  type PodAwareLb,
  serviceLbs,
  targetGroupBindings,
  templateGateTypes,
} from './load-balancers.ts';
import { appContainerIndex } from './replicaset.ts';
import { serviceName } from './service.ts';

export const SEVERITIES = ['warning', 'info'] as const;
export type Severity = (typeof SEVERITIES)[number];

/** The rules, by stable id (docs/cli.md#lint lists them). */
export const LINT_RULES = {
  /** The app container has no readiness probe. */
  probe: 'TEAL-PROBE-001',
  /** Pods stop serving sooner after deletion than the load balancer drains them. */
  drain: 'TEAL-DRAIN-001',
  /** A pod-aware load balancer targets the active Service, which a switch changes by selector. */
  traffic: 'TEAL-TRAFFIC-001',
  /** A value lint reads cannot be read (a malformed annotation or field). */
  input: 'TEAL-INPUT-001',
  /** Objects lint could not read: what they would have shown is not checked. */
  unread: 'TEAL-READ-001',
} as const;

export interface Finding {
  rule: (typeof LINT_RULES)[keyof typeof LINT_RULES];
  severity: Severity;
  /** Kind/name of the object at fault. */
  object: string;
  /** The field of that object, when one is at fault. */
  field?: string;
  message: string;
  /** What to do about it. */
  fix?: string;
}

/** A list lint asked for: the objects, or why it could not read them. */
export type Listed = { items: KubeObject[] } | { unreadable: string };

export interface LintInput {
  app: App;
  /** The Services of the App's namespace. */
  services: Listed;
  ingresses: Listed;
  ingressClasses: Listed;
  /** TargetGroupBindings (elbv2.k8s.aws/v1beta1) of the namespace. */
  targetGroupBindings: Listed;
  /** --drain, in seconds: the drain to hold pods against, whatever the load balancers say. */
  drainSeconds?: number | undefined;
}

export interface LintReport {
  findings: Finding[];
  /** The drain pods are held against, and where that number comes from; undefined when nothing drains them. */
  drain: { seconds: number; source: string } | undefined;
  /** The pod-aware load balancers found in front of the App's Services. */
  loadBalancers: PodAwareLb[];
}

/** What a kubelet waits when the pod does not say (PodSpec.terminationGracePeriodSeconds). */
export const DEFAULT_GRACE_SECONDS = 30;

/** The ping and pong Services, when the App has slots (blueGreen.pingPong). */
export function slotsOf(app: App): { ping: string; pong: string } | undefined {
  const slots = app.spec.strategy.blueGreen.pingPong;
  return slots ? { ping: slots.pingService, pong: slots.pongService } : undefined;
}

/** The Services that reach the App's pods: active, preview, and the slots'. */
export function appServices(app: App): string[] {
  const slots = slotsOf(app);
  return [serviceName(app, 'active'), serviceName(app, 'preview'), ...(slots ? [slots.ping, slots.pong] : [])];
}

const record = (value: unknown): Record<string, unknown> | undefined =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;

const appObject = (app: App) => `App/${app.metadata.name}`;

/** The app container (the one named "app", else the first), as the operator picks it, and its path. */
function appContainer(app: App): { container: Record<string, unknown>; field: string } {
  const containers = app.spec.template.spec.containers;
  const index = appContainerIndex(containers);
  return {
    container: (containers[index] ?? {}) as Record<string, unknown>,
    field: `spec.template.spec.containers[${index}]`,
  };
}

// ---- TEAL-PROBE-001 ----

function probeRule(app: App): Finding[] {
  const { container, field } = appContainer(app);
  if (record(container.readinessProbe)) return [];
  return [
    {
      rule: LINT_RULES.probe,
      severity: 'warning',
      object: appObject(app),
      field: `${field}.readinessProbe`,
      message: `container "${String(container.name)}" has no readinessProbe: its pods are Ready, in the Services' endpoints and counted available for a promotion as soon as the container starts, before the app answers`,
      fix: `add a readinessProbe to ${field} (an httpGet of a path that answers once the app serves)`,
    },
  ];
}

// ---- the pods' shutdown ----

/** How long a pod keeps accepting connections after its deletion, as far as the template says. */
type Shutdown =
  | { seconds: number; how: string }
  | { unknown: string }
  | { problem: { field: string; problem: string } };

/** The seconds of `sleep N` run directly or through `sh -c`, the usual preStop hook; undefined for any other command. */
export function execSleepSeconds(command: unknown): number | undefined {
  if (!Array.isArray(command) || !command.every((c) => typeof c === 'string')) return undefined;
  const words = command as string[];
  const line =
    words.length >= 3 && /(^|\/)(ba)?sh$/.test(words[0] ?? '') && words[1] === '-c' ? words[2] : words.join(' ');
  const match = /^\s*(?:\/\S*\/)?sleep\s+(\d+(?:\.\d+)?)s?\s*$/.exec(line ?? '');
  return match ? Number(match[1]) : undefined;
}

/** The preStop hook's time: seconds, none (0), unknown (it does something else), or a value that cannot be read. */
function preStopOf(container: Record<string, unknown>, field: string): Shutdown {
  const none = { seconds: 0, how: 'no preStop hook' };
  if (container.lifecycle === undefined) return none;
  const lifecycle = record(container.lifecycle);
  if (!lifecycle) return { problem: { field: `${field}.lifecycle`, problem: 'not an object' } };
  if (lifecycle.preStop === undefined) return none;
  const preStop = record(lifecycle.preStop);
  if (!preStop) return { problem: { field: `${field}.lifecycle.preStop`, problem: 'not an object' } };
  const sleep = record(preStop.sleep);
  if (sleep) {
    const seconds = sleep.seconds;
    if (typeof seconds !== 'number' || !Number.isInteger(seconds) || seconds < 0) {
      return {
        problem: { field: `${field}.lifecycle.preStop.sleep.seconds`, problem: 'not a whole number of seconds' },
      };
    }
    return { seconds, how: `preStop sleep ${seconds}s` };
  }
  const exec = record(preStop.exec);
  const slept = exec ? execSleepSeconds(exec.command) : undefined;
  if (slept !== undefined) return { seconds: slept, how: `preStop "sleep ${slept}"` };
  const kind = exec ? 'exec' : (Object.keys(preStop)[0] ?? 'empty');
  return { unknown: `the preStop hook (${kind}) does not say how long it runs` };
}

/**
 * How long a pod surely keeps accepting connections once deleted: its preStop
 * hook's time, within terminationGracePeriodSeconds. The grace period counts
 * from the deletion with the hook inside it (the kubelet kills the container
 * when it ends), so the two do not add up; and what the app does on SIGTERM
 * after the hook, lint cannot know: many servers stop accepting at once.
 */
export function shutdownOf(app: App): Shutdown {
  const { container, field } = appContainer(app);
  const grace = (app.spec.template.spec as Record<string, unknown>).terminationGracePeriodSeconds;
  if (grace !== undefined && (typeof grace !== 'number' || !Number.isInteger(grace) || grace < 0)) {
    return {
      problem: { field: 'spec.template.spec.terminationGracePeriodSeconds', problem: 'not a whole number of seconds' },
    };
  }
  const graceSeconds = grace ?? DEFAULT_GRACE_SECONDS;
  const graceHow = `terminationGracePeriodSeconds ${graceSeconds}${grace === undefined ? ' (the default)' : ''}`;
  const preStop = preStopOf(container, field);
  if (!('seconds' in preStop)) return preStop;
  const cut =
    preStop.seconds === 0
      ? ''
      : preStop.seconds > graceSeconds
        ? ', which cuts the hook short'
        : ', which includes the hook';
  return { seconds: Math.min(preStop.seconds, graceSeconds), how: `${preStop.how}; ${graceHow}${cut}` };
}

// ---- TEAL-DRAIN-001 ----

/** The drain pods are held against: --drain, else the longest a load balancer found drains. */
function drainOf(lbs: readonly PodAwareLb[], override: number | undefined): LintReport['drain'] {
  if (override !== undefined) return { seconds: override, source: 'set by --drain' };
  let longest: LintReport['drain'];
  for (const { drain } of lbs) {
    if ('seconds' in drain && (!longest || drain.seconds > longest.seconds)) longest = drain;
  }
  return longest;
}

function drainRule(app: App, lbs: readonly PodAwareLb[], drain: LintReport['drain'], shutdown: Shutdown): Finding[] {
  const object = appObject(app);
  if (!drain) {
    const unknown = lbs.filter(
      (lb): lb is PodAwareLb & { drain: Extract<Drain, { unknown: string }> } => 'unknown' in lb.drain,
    );
    return unknown.map((lb) => ({
      rule: LINT_RULES.drain,
      severity: 'info',
      object: lb.object,
      message: `not checked: how long ${lb.what} drains a deregistered pod: ${lb.drain.unknown}`,
      fix: 'give it with --drain DURATION to check the pods against it',
    }));
  }
  // A value that cannot be read is its own finding (lint()).
  if ('problem' in shutdown) return [];
  if ('unknown' in shutdown) {
    return [
      {
        rule: LINT_RULES.drain,
        severity: 'info',
        object,
        field: 'spec.template.spec',
        message: `not checked: ${shutdown.unknown}; the load balancer drains for ${drain.seconds}s (${drain.source})`,
        fix: `make sure the pods keep serving at least ${drain.seconds}s after their deletion`,
      },
    ];
  }
  if (shutdown.seconds >= drain.seconds) return [];
  return [
    {
      rule: LINT_RULES.drain,
      severity: 'warning',
      object,
      field: 'spec.template.spec',
      message: `pods surely accept connections for only ${shutdown.seconds}s after their deletion (${shutdown.how}), shorter than the ${drain.seconds}s the load balancer drains them (${drain.source}): requests it still sends or holds open meanwhile fail`,
      fix: `make the preStop hook sleep at least ${drain.seconds}s (lifecycle.preStop.sleep.seconds) with terminationGracePeriodSeconds above it, or shorten the drain to what the hook sleeps${shutdown.seconds > 0 ? ` (${shutdown.seconds}s now)` : ''}`,
    },
  ];
}

// ---- TEAL-TRAFFIC-001 ----

function trafficRule(app: App, lbs: readonly PodAwareLb[]): Finding[] {
  const active = serviceName(app, 'active');
  const slots = slotsOf(app);
  const switched = `the active Service ${active}, which Teal switches by selector`;
  const why =
    "the new revision's pods did not match it when they were created, so the load balancer injected no readiness gate into them: at the switch it deregisters the old pods while the new ones are not registered yet, and requests fail meanwhile";
  return lbs
    .filter((lb) => lb.service === active || (lb.service === undefined && !slots))
    .map((lb) => ({
      rule: LINT_RULES.traffic,
      severity: 'warning',
      object: lb.object,
      message:
        lb.service === undefined
          ? `${lb.what}, and the App has no ping-pong slots: if it targets ${switched}, ${why}`
          : `${lb.what} targets ${switched}${slots ? '' : ', and the App has no ping-pong slots'}: ${why}`,
      fix: slots
        ? `point it at the ping and pong Services (${slots.ping}, ${slots.pong}), which keep their selectors, instead of ${active}`
        : 'set strategy.blueGreen.pingPong (two Services with fixed selectors: each revision starts in the idle one, so its pods get the readiness gate at creation) with strategy.blueGreen.trafficRouting, and point the load balancer at those two Services',
    }));
}

// ---- TEAL-INPUT-001, TEAL-READ-001 ----

function inputFinding(p: { object: string; field: string; problem: string }): Finding {
  return {
    rule: LINT_RULES.input,
    severity: 'warning',
    object: p.object,
    field: p.field,
    message: `${p.field} cannot be read: ${p.problem}`,
    fix: 'correct the value: until then lint cannot check what it configures, and its controller may refuse it',
  };
}

function unreadFinding(what: string, listed: Listed): Finding[] {
  if (!('unreadable' in listed)) return [];
  return [
    {
      rule: LINT_RULES.unread,
      severity: 'info',
      object: what,
      message: `not checked: cannot read ${what}: ${listed.unreadable}`,
    },
  ];
}

const itemsOf = (listed: Listed): KubeObject[] => ('items' in listed ? listed.items : []);

/** The pod-aware load balancers in front of the App's Services, and the values that could not be read. */
export function findLoadBalancers(input: LintInput): Found {
  const { app } = input;
  const names = appServices(app);
  const services = new Map(
    itemsOf(input.services).flatMap((s) =>
      typeof s.metadata?.name === 'string' ? [[s.metadata.name, s] as const] : [],
    ),
  );
  const classes = 'items' in input.ingressClasses ? input.ingressClasses.items : undefined;
  const parts = [
    albIngresses(itemsOf(input.ingresses), classes, names, services),
    targetGroupBindings(itemsOf(input.targetGroupBindings), names),
    serviceLbs(names, services),
  ];
  const lbs = parts.flatMap((p) => p.lbs);
  const template = templateGateTypes(
    (app.spec.template.spec as Record<string, unknown>).readinessGates,
    appObject(app),
  );
  const switched = (app.spec.strategy.blueGreen.switch?.readinessGates ?? []).map((type) => ({
    type,
    namedBy: 'strategy.blueGreen.switch.readinessGates',
  }));
  const gates = gateLbs([...template.gates, ...switched], appObject(app), lbs);
  return { lbs: [...lbs, ...gates], problems: [...parts.flatMap((p) => p.problems), ...template.problems] };
}

/**
 * The IngressClasses matter only for an Ingress in front of the App that is
 * not plainly of class "alb": only then is their absence worth a note.
 */
function classesNeeded(input: LintInput): boolean {
  const names = appServices(input.app);
  return itemsOf(input.ingresses).some(
    (i) => ingressServices(i).some((s) => names.includes(s)) && !isAlbIngress(i, undefined),
  );
}

/** Every rule over the App and what was read around it. */
export function lint(input: LintInput): LintReport {
  const { app } = input;
  const { lbs, problems } = findLoadBalancers(input);
  const drain = drainOf(lbs, input.drainSeconds);
  const shutdown = shutdownOf(app);
  const findings = [
    ...probeRule(app),
    ...drainRule(app, lbs, drain, shutdown),
    ...trafficRule(app, lbs),
    ...('problem' in shutdown ? [{ object: appObject(app), ...shutdown.problem }] : []).map(inputFinding),
    ...problems.map(inputFinding),
    ...unreadFinding('services', input.services),
    ...unreadFinding('ingresses.networking.k8s.io', input.ingresses),
    ...(classesNeeded(input) ? unreadFinding('ingressclasses.networking.k8s.io', input.ingressClasses) : []),
    ...unreadFinding('targetgroupbindings.elbv2.k8s.aws', input.targetGroupBindings),
  ];
  return { findings, drain, loadBalancers: lbs };
}

/** Whether the report holds a warning: `kubectl teal lint` then exits 1. */
export const hasWarnings = (report: LintReport): boolean => report.findings.some((f) => f.severity === 'warning');
