// The Gateway API HTTPRoute that switches between the ping-pong slots
// (spec.strategy.blueGreen.trafficRouting.gatewayAPI), as Teal reads and
// writes it. The route is someone else's object: Teal reads the weights of
// the backendRefs naming the two slot Services in one rule, and writes those
// weights only, nothing else of the route. Pure: the cache keeps the trimmed
// route, the planner reads it here, the executor sends the patch made here.
import { type ObjectRef, objectRef } from '../app/cluster-values.ts';
import type { Slot } from '../app/labels.ts';
import type { App } from '../app/schema.ts';

export const ROUTE_GROUP = 'gateway.networking.k8s.io';
export const ROUTE_VERSION = 'v1';
export const ROUTE_PLURAL = 'httproutes';
/** The weight of the slot that serves; the idle one gets 0. */
export const FULL_WEIGHT = 100;

/** A backendRef as the cache keeps it: what says which Service it is, and its weight as written. */
export interface RouteBackendRef {
  group?: string;
  kind?: string;
  name: string;
  namespace?: string;
  weight?: number;
}

/** One parent's verdict: the observedGeneration of Accepted and of ResolvedRefs, each only when True. */
export interface RouteParent {
  accepted?: number;
  resolvedRefs?: number;
}

export interface ObservedRoute extends ObjectRef {
  generation: number;
  rules: { backendRefs: RouteBackendRef[] }[];
  parents: RouteParent[];
}

type RawCondition = { type?: unknown; status?: unknown; observedGeneration?: unknown };
type RawRoute = {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; generation?: number };
  spec?: { rules?: { backendRefs?: Record<string, unknown>[] }[] };
  status?: { parents?: { conditions?: RawCondition[] }[] };
};

const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

function trueAt(conditions: RawCondition[] | undefined, type: string): number | undefined {
  const c = (conditions ?? []).find((x) => x.type === type);
  if (c?.status !== 'True') return undefined;
  return typeof c.observedGeneration === 'number' ? c.observedGeneration : 0;
}

/** An HTTPRoute trimmed to what the switch reads. */
export function observeRoute(raw: unknown): ObservedRoute | undefined {
  const route = raw as RawRoute;
  const ref = objectRef(route.metadata ?? {});
  if (!ref) return undefined;
  const rules = (Array.isArray(route.spec?.rules) ? route.spec.rules : []).map((rule) => ({
    backendRefs: (Array.isArray(rule?.backendRefs) ? rule.backendRefs : []).map((b) => {
      const group = text(b.group);
      const kind = text(b.kind);
      const namespace = text(b.namespace);
      return {
        name: text(b.name) ?? '',
        ...(group !== undefined ? { group } : {}),
        ...(kind !== undefined ? { kind } : {}),
        ...(namespace !== undefined ? { namespace } : {}),
        ...(typeof b.weight === 'number' ? { weight: b.weight } : {}),
      };
    }),
  }));
  const parents = (Array.isArray(route.status?.parents) ? route.status.parents : []).map((p) => {
    const accepted = trueAt(p?.conditions, 'Accepted');
    const resolvedRefs = trueAt(p?.conditions, 'ResolvedRefs');
    return {
      ...(accepted !== undefined ? { accepted } : {}),
      ...(resolvedRefs !== undefined ? { resolvedRefs } : {}),
    };
  });
  return { ...ref, generation: route.metadata?.generation ?? 0, rules, parents };
}

/** The route the App names, and the rule in it. */
export function routeSpec(app: App): { httpRoute: string; rule: number } | undefined {
  return app.spec.strategy.blueGreen.trafficRouting?.gatewayAPI;
}

export const slotServiceName = (app: App, slot: Slot): string => {
  const pp = app.spec.strategy.blueGreen.pingPong;
  return (slot === 'ping' ? pp?.pingService : pp?.pongService) ?? '';
};

/** The route as the switch sees it: which refs are each slot's, their weights, and whether it settled. */
export interface RouteView {
  name: string;
  rule: number;
  refs: Record<Slot, number[]>;
  weights: Record<Slot, number>;
  generation: number;
  /** Every parent has Accepted and ResolvedRefs True at the route's generation or later (and there is one). */
  settled: boolean;
}

/** A backendRef naming this Service of this namespace (core group, kind Service, as the defaults say). */
const names = (ref: RouteBackendRef, service: string, namespace: string) =>
  ref.name === service &&
  (ref.group ?? '') === '' &&
  (ref.kind ?? 'Service') === 'Service' &&
  (ref.namespace ?? namespace) === namespace;

/**
 * The route read for the switch, or why it cannot be used: missing, no such
 * rule, or a rule whose backendRefs do not name both slot Services. Each
 * problem names the field, the route and the rule; nothing is written then.
 */
export function readRoute(app: App, route: ObservedRoute | undefined): RouteView | { problem: string } {
  const spec = routeSpec(app);
  const field = 'spec.strategy.blueGreen.trafficRouting.gatewayAPI';
  if (!spec) return { problem: `${field}: not set` };
  const namespace = app.metadata.namespace ?? '';
  const where = `HTTPRoute ${namespace}/${spec.httpRoute}`;
  if (!route) return { problem: `${field}.httpRoute: ${where} not found` };
  const rule = route.rules[spec.rule];
  if (!rule) return { problem: `${field}.rule: ${where} has no rule ${spec.rule} (it has ${route.rules.length})` };
  const refs: Record<Slot, number[]> = { ping: [], pong: [] };
  const weights: Record<Slot, number> = { ping: 0, pong: 0 };
  for (const slot of ['ping', 'pong'] as const) {
    const service = slotServiceName(app, slot);
    rule.backendRefs.forEach((ref, i) => {
      if (!names(ref, service, namespace)) return;
      refs[slot].push(i);
      // An absent weight is 1, as the Gateway API defaults it.
      weights[slot] += ref.weight ?? 1;
    });
  }
  const missing = (['ping', 'pong'] as const).filter((s) => refs[s].length === 0).map((s) => slotServiceName(app, s));
  if (missing.length > 0) {
    return {
      problem: `${field}: ${where} rule ${spec.rule} does not name Service ${missing.join(' nor ')} in its backendRefs (it must name both the ping and the pong Service)`,
    };
  }
  const settled =
    route.parents.length > 0 &&
    route.parents.every((p) => (p.accepted ?? -1) >= route.generation && (p.resolvedRefs ?? -1) >= route.generation);
  return { name: route.name, rule: spec.rule, refs, weights, generation: route.generation, settled };
}

/** The slot that gets every request, or undefined when the weights split them (or send none). */
export function routedSlot(view: RouteView): Slot | undefined {
  if (view.weights.ping > 0 && view.weights.pong === 0) return 'ping';
  if (view.weights.pong > 0 && view.weights.ping === 0) return 'pong';
  return undefined;
}

/** How the weights read, for messages. */
export const weightsText = (view: RouteView): string => `ping ${view.weights.ping}, pong ${view.weights.pong}`;

/** A JSON Patch operation, as RFC 6902 has it (only the two Teal sends). */
export type JsonPatchOp = { op: 'test' | 'add'; path: string; value: unknown };

/**
 * The one write of a switch: every ref of `to` gets FULL_WEIGHT, every ref of
 * the other slot 0. Each write is guarded by a test that the ref at that index
 * still names that Service: a route changed since it was read fails the patch
 * (422), and the next reconcile reads it again. No other field is touched.
 */
export function routePatch(app: App, view: RouteView, to: Slot): JsonPatchOp[] {
  const ops: JsonPatchOp[] = [];
  for (const slot of ['ping', 'pong'] as const) {
    for (const i of view.refs[slot]) {
      const path = `/spec/rules/${view.rule}/backendRefs/${i}`;
      ops.push({ op: 'test', path: `${path}/name`, value: slotServiceName(app, slot) });
      ops.push({ op: 'add', path: `${path}/weight`, value: slot === to ? FULL_WEIGHT : 0 });
    }
  }
  return ops;
}
