// The pod-aware load balancers in front of an App's Services, found in the
// objects of its namespace, and how long each drains a target it deregisters.
// Pure: `kubectl teal lint` (src/cli/commands/lint.ts) reads the objects, and
// the lint rules (lint.ts) judge what this file finds. Every value read here
// is input: an annotation that cannot be read is a problem named by object and
// field, never an exception.
//
// "Pod-aware": the load balancer sends traffic to pod IPs itself, registering
// the endpoints of a Service as targets and injecting its readiness gate into
// pods that match the Service when they are created. Load balancers that send
// traffic to nodes (ALB target-type instance, a NodePort) go through kube-proxy,
// which follows a selector switch at once.

/** What lint reads of any object: its name, annotations and spec, all unchecked. */
export interface KubeObject {
  metadata?: { name?: unknown; annotations?: unknown };
  spec?: unknown;
}

/** How long a load balancer keeps a deregistered target draining, and where that number comes from. */
export type Drain = { seconds: number; source: string } | { unknown: string };

export interface PodAwareLb {
  /** The object that makes it, as Kind/name. */
  object: string;
  /** The load balancer in words: "ALB Ingress web (target-type ip)". */
  what: string;
  /** The Service it targets; undefined when the object does not say (a readiness gate in the pod template). */
  service: string | undefined;
  drain: Drain;
}

/** A value lint could not read: the object, the field and what is wrong with it. */
export interface Unreadable {
  object: string;
  field: string;
  problem: string;
}

export interface Found {
  lbs: PodAwareLb[];
  problems: Unreadable[];
}

// ---- the AWS Load Balancer Controller (kubernetes-sigs/aws-load-balancer-controller) ----

export const ALB_TARGET_TYPE = 'alb.ingress.kubernetes.io/target-type';
export const ALB_TG_ATTRIBUTES = 'alb.ingress.kubernetes.io/target-group-attributes';
export const NLB_TARGET_TYPE = 'service.beta.kubernetes.io/aws-load-balancer-nlb-target-type';
export const NLB_TG_ATTRIBUTES = 'service.beta.kubernetes.io/aws-load-balancer-target-group-attributes';
export const DEREGISTRATION_DELAY = 'deregistration_delay.timeout_seconds';
/** AWS's deregistration delay of a target group that does not set one (ELBv2 API reference, TargetGroupAttribute). */
export const AWS_DEFAULT_DRAIN_SECONDS = 300;
const AWS_MAX_DRAIN_SECONDS = 3600;
/** The IngressClass controllers that make ALBs: the open-source controller's, and EKS Auto Mode's. */
const ALB_CONTROLLERS = new Set(['ingress.k8s.aws/alb', 'eks.amazonaws.com/alb']);
const INGRESS_CLASS_ANNOTATION = 'kubernetes.io/ingress.class';
const DEFAULT_CLASS_ANNOTATION = 'ingressclass.kubernetes.io/is-default-class';

// ---- GKE container-native load balancing ----

export const GKE_NEG = 'cloud.google.com/neg';

/**
 * Readiness-gate condition types of pod-aware load balancers, by prefix: the
 * AWS controller's (target-health.elbv2.k8s.aws/<TargetGroupBinding>), GKE's
 * NEG gate, and the test harness's load balancer model
 * (test/cluster/lb-model.ts), whose only mark in the cluster is the gate its
 * pods name.
 */
const AWS_GATE_PREFIX = 'target-health.elbv2.k8s.aws/';
/** The gate prefix of the test harness's load balancer model, which the model takes from here (test/cluster/data-plane/lb-plan.ts). */
export const LB_MODEL_GATE_PREFIX = 'target-health.lb-model.teal.dev/';
export const LB_GATES: readonly { prefix: string; what: string }[] = [
  { prefix: AWS_GATE_PREFIX, what: 'a load balancer of the AWS Load Balancer Controller' },
  { prefix: 'cloud.google.com/load-balancer-neg-ready', what: 'a GKE load balancer through a NEG' },
  { prefix: LB_MODEL_GATE_PREFIX, what: "the test harness's load balancer model" },
];

const record = (value: unknown): Record<string, unknown> | undefined =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;

const nameOf = (o: KubeObject): string => (typeof o.metadata?.name === 'string' ? o.metadata.name : '');

/** The string annotations of an object; a non-string value is left out (the API server allows none). */
export function annotationsOf(o: KubeObject | undefined): Record<string, string> {
  const all = record(o?.metadata?.annotations) ?? {};
  return Object.fromEntries(Object.entries(all).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

/** The Services an Ingress sends to: its default backend and every path's. */
export function ingressServices(ingress: KubeObject): string[] {
  const spec = record(ingress.spec);
  const backends: unknown[] = [spec?.defaultBackend];
  const rules = Array.isArray(spec?.rules) ? spec.rules : [];
  for (const rule of rules) {
    const paths = record(record(rule)?.http)?.paths;
    for (const path of Array.isArray(paths) ? paths : []) backends.push(record(path)?.backend);
  }
  const names = backends.map((b) => record(record(b)?.service)?.name).filter((n) => typeof n === 'string');
  return [...new Set(names as string[])];
}

/** The class an Ingress names (spec.ingressClassName, else the older annotation), if any. */
function ingressClassOf(ingress: KubeObject): string | undefined {
  const name = record(ingress.spec)?.ingressClassName;
  if (typeof name === 'string') return name;
  return annotationsOf(ingress)[INGRESS_CLASS_ANNOTATION];
}

/**
 * Whether the AWS Load Balancer Controller makes an ALB of this Ingress: its
 * class is "alb", or an IngressClass of an ALB controller (the cluster's
 * default one when the Ingress names none). classes undefined: they could
 * not be read, so only the name "alb" counts.
 */
export function isAlbIngress(ingress: KubeObject, classes: KubeObject[] | undefined): boolean {
  const named = ingressClassOf(ingress);
  if (named === 'alb') return true;
  const controllerOf = (c: KubeObject) => record(c.spec)?.controller;
  const cls = (classes ?? []).find((c) =>
    named === undefined ? annotationsOf(c)[DEFAULT_CLASS_ANNOTATION] === 'true' : nameOf(c) === named,
  );
  const controller = cls ? controllerOf(cls) : undefined;
  return typeof controller === 'string' && ALB_CONTROLLERS.has(controller);
}

/**
 * An AWS stringMap annotation ("k1=v1,k2=v2") read whole; a pair without "="
 * makes it unreadable, as the controller refuses it.
 */
export function parseStringMap(text: string): Map<string, string> | string {
  const out = new Map<string, string>();
  for (const raw of text.split(',')) {
    const pair = raw.trim();
    if (pair === '') continue;
    const at = pair.indexOf('=');
    if (at <= 0) return `"${pair}" is not key=value`;
    out.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
  }
  return out;
}

/**
 * The deregistration delay an AWS target-group-attributes annotation sets:
 * seconds, AWS's default when the annotation or its key is absent, or a
 * problem with the value.
 */
export function awsDrain(
  annotations: Record<string, string>,
  key: string,
  object: string,
): { drain: Drain; problem?: Unreadable } {
  const text = annotations[key];
  const fallback = `AWS's default deregistration delay: ${object} sets no ${DEREGISTRATION_DELAY}`;
  if (text === undefined) return { drain: { seconds: AWS_DEFAULT_DRAIN_SECONDS, source: fallback } };
  const unreadable = (problem: string) => ({
    drain: { unknown: `${object}'s ${key} cannot be read` },
    problem: { object, field: `metadata.annotations["${key}"]`, problem },
  });
  const map = parseStringMap(text);
  if (typeof map === 'string')
    return unreadable(`${map}: it must be a list of key=value, such as ${DEREGISTRATION_DELAY}=30`);
  const value = map.get(DEREGISTRATION_DELAY);
  if (value === undefined) return { drain: { seconds: AWS_DEFAULT_DRAIN_SECONDS, source: fallback } };
  const seconds = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!(seconds <= AWS_MAX_DRAIN_SECONDS)) {
    return unreadable(
      `${DEREGISTRATION_DELAY}=${value}: it must be a whole number of seconds from 0 to ${AWS_MAX_DRAIN_SECONDS}`,
    );
  }
  return { drain: { seconds, source: `${DEREGISTRATION_DELAY}=${seconds} on ${object}` } };
}

/** The ALB target type of a backend: the Service's annotation wins over the Ingress's (the controller's rule); instance by default. */
function albTargetType(
  service: KubeObject | undefined,
  serviceObject: string,
  ingress: KubeObject,
  ingressObject: string,
): { type: string; problem?: Unreadable } {
  const onService = annotationsOf(service)[ALB_TARGET_TYPE];
  const [value, object] =
    onService !== undefined ? [onService, serviceObject] : [annotationsOf(ingress)[ALB_TARGET_TYPE], ingressObject];
  if (value === undefined) return { type: 'instance' };
  if (value === 'ip' || value === 'instance') return { type: value };
  return {
    type: 'unknown',
    problem: {
      object,
      field: `metadata.annotations["${ALB_TARGET_TYPE}"]`,
      problem: `"${value}" is neither ip nor instance`,
    },
  };
}

/** The services lint looks at: by name, with the ones it found (undefined: not found or not read). */
export type ServicesByName = ReadonlyMap<string, KubeObject>;

/** ALB Ingresses in IP mode whose backend is one of the App's Services. */
export function albIngresses(
  ingresses: KubeObject[],
  classes: KubeObject[] | undefined,
  appServices: readonly string[],
  services: ServicesByName,
): Found {
  const found: Found = { lbs: [], problems: [] };
  for (const ingress of ingresses) {
    if (!isAlbIngress(ingress, classes)) continue;
    const ingressObject = `Ingress/${nameOf(ingress)}`;
    for (const name of ingressServices(ingress).filter((s) => appServices.includes(s))) {
      const service = services.get(name);
      const serviceObject = `Service/${name}`;
      const target = albTargetType(service, serviceObject, ingress, ingressObject);
      if (target.problem) found.problems.push(target.problem);
      if (target.type !== 'ip') continue;
      // The Service's attributes win over the Ingress's, as for every annotation both may carry.
      const onService = annotationsOf(service)[ALB_TG_ATTRIBUTES] !== undefined;
      const { drain, problem } = onService
        ? awsDrain(annotationsOf(service), ALB_TG_ATTRIBUTES, serviceObject)
        : awsDrain(annotationsOf(ingress), ALB_TG_ATTRIBUTES, ingressObject);
      if (problem) found.problems.push(problem);
      found.lbs.push({
        object: ingressObject,
        what: `ALB Ingress ${nameOf(ingress)} (target-type ip)`,
        service: name,
        drain,
      });
    }
  }
  return found;
}

/** TargetGroupBindings (elbv2.k8s.aws) that register one of the App's Services' pods by IP. */
export function targetGroupBindings(bindings: KubeObject[], appServices: readonly string[]): Found {
  const found: Found = { lbs: [], problems: [] };
  for (const tgb of bindings) {
    const spec = record(tgb.spec);
    const service = record(spec?.serviceRef)?.name;
    if (typeof service !== 'string' || !appServices.includes(service)) continue;
    const object = `TargetGroupBinding/${nameOf(tgb)}`;
    const type = spec?.targetType;
    if (type === 'instance') continue;
    if (type !== 'ip') {
      found.problems.push({
        object,
        field: 'spec.targetType',
        problem:
          type === undefined
            ? 'not set: the controller takes it from the AWS target group, which lint cannot see; set ip or instance'
            : `${JSON.stringify(type)} is neither ip nor instance`,
      });
      continue;
    }
    found.lbs.push({
      object,
      what: `TargetGroupBinding ${nameOf(tgb)} (targetType ip)`,
      service,
      drain: {
        seconds: AWS_DEFAULT_DRAIN_SECONDS,
        source: `AWS's default deregistration delay: ${object}'s target group is configured outside the cluster, where lint cannot see it (--drain gives its delay)`,
      },
    });
  }
  return found;
}

/** Whether a GKE NEG annotation asks for NEGs: {"ingress": true} or some exposed_ports. */
function negWanted(text: string): boolean | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'not JSON: it must be such as {"ingress": true} or {"exposed_ports": {"80": {}}}';
  }
  const neg = record(value);
  if (!neg) return 'not a JSON object';
  const ports = neg.exposed_ports;
  if (ports !== undefined && !record(ports)) return 'exposed_ports is not an object of ports';
  return neg.ingress === true || Object.keys(record(ports) ?? {}).length > 0;
}

/** Service-level pod-aware load balancers: a GKE NEG, or an NLB in IP mode. */
export function serviceLbs(appServices: readonly string[], services: ServicesByName): Found {
  const found: Found = { lbs: [], problems: [] };
  for (const name of appServices) {
    const service = services.get(name);
    const annotations = annotationsOf(service);
    const object = `Service/${name}`;
    const neg = annotations[GKE_NEG];
    if (neg !== undefined) {
      const wanted = negWanted(neg);
      if (typeof wanted === 'string') {
        found.problems.push({ object, field: `metadata.annotations["${GKE_NEG}"]`, problem: wanted });
      } else if (wanted) {
        found.lbs.push({
          object,
          what: `GKE NEG of Service ${name}`,
          service: name,
          drain: { unknown: 'GKE sets connection draining in a BackendConfig, which lint does not read' },
        });
      }
    }
    const nlb = annotations[NLB_TARGET_TYPE];
    if (nlb === 'ip') {
      const { drain, problem } = awsDrain(annotations, NLB_TG_ATTRIBUTES, object);
      if (problem) found.problems.push(problem);
      found.lbs.push({ object, what: `NLB of Service ${name} (target type ip)`, service: name, drain });
    } else if (nlb !== undefined && nlb !== 'instance') {
      found.problems.push({
        object,
        field: `metadata.annotations["${NLB_TARGET_TYPE}"]`,
        problem: `"${nlb}" is neither ip nor instance`,
      });
    }
  }
  return found;
}

/** A readiness gate named for the App's pods, and who names it: "the pod template", "blueGreen.switch.readinessGates". */
export interface NamedGate {
  type: string;
  namedBy: string;
}

/** The condition types of a pod template's readinessGates; a problem when it is not a list. */
export function templateGateTypes(gates: unknown, object: string): { gates: NamedGate[]; problems: Unreadable[] } {
  if (gates === undefined) return { gates: [], problems: [] };
  if (!Array.isArray(gates)) {
    return { gates: [], problems: [{ object, field: 'spec.template.spec.readinessGates', problem: 'not a list' }] };
  }
  const types = gates.map((g) => record(g)?.conditionType).filter((t): t is string => typeof t === 'string');
  return { gates: types.map((type) => ({ type, namedBy: 'the pod template' })), problems: [] };
}

/**
 * Pod-aware load balancers known only by a readiness gate of theirs that is
 * named for the App's pods, each one whose Service is not said. A gate named
 * twice counts once; the gate of a TargetGroupBinding already found, not at all.
 */
export function gateLbs(gates: readonly NamedGate[], object: string, known: readonly PodAwareLb[]): PodAwareLb[] {
  const lbs: PodAwareLb[] = [];
  const seen = new Set<string>();
  for (const { type, namedBy } of gates) {
    const lb = LB_GATES.find((g) => type.startsWith(g.prefix));
    if (!lb || seen.has(type)) continue;
    seen.add(type);
    const tgb = type.startsWith(AWS_GATE_PREFIX) ? `TargetGroupBinding/${type.slice(AWS_GATE_PREFIX.length)}` : '';
    if (known.some((k) => k.object === tgb)) continue;
    lbs.push({
      object,
      what: `${lb.what} (${namedBy} names its readiness gate ${type})`,
      service: undefined,
      drain: { unknown: `the readiness gate ${type} does not say how long its load balancer drains` },
    });
  }
  return lbs;
}
