// Checks of an App's spec that its schema cannot express, each naming the field.
import { trafficCheckProblems } from '../analysis/traffic.ts';
import { previewsProblems } from '../app/previews-problems.ts';
import type { App } from '../app/schema.ts';
import { buildSpecProblems } from '../build/plan.ts';
import { type BuildDefaults, imageRepository, pushSecretName } from '../build/registry.ts';
import { servicePorts } from './service.ts';

/** Checks the schema cannot express; each names the field. */
export function specProblems(app: App, buildDefaults: BuildDefaults = {}): string[] {
  const problems = buildSpecProblems(app, buildDefaults);
  const ports = servicePorts(app);
  if (ports.length === 0) {
    problems.push('spec.service.ports: required when the app container declares no containerPort');
  } else if (ports.length > 1 && ports.some((p) => !p.name)) {
    problems.push('spec.service.ports: every port needs a name when there are several');
  }
  const bg = app.spec.strategy.blueGreen;
  const active = bg.activeService ?? app.metadata.name;
  const preview = bg.previewService ?? `${app.metadata.name}-preview`;
  if (active === preview) {
    problems.push('spec.strategy.blueGreen.previewService: must differ from activeService');
  }
  if (bg.previewReplicaCount !== undefined && bg.previewReplicaCount > app.spec.replicas && app.spec.replicas > 0) {
    problems.push('spec.strategy.blueGreen.previewReplicaCount: must not exceed spec.replicas');
  }
  problems.push(...pingPongProblems(bg, [active, preview]));
  const trafficCheck = bg.switch?.trafficCheck;
  if (trafficCheck) problems.push(...trafficCheckProblems(trafficCheck, `${BG}.switch.trafficCheck`));
  const production = { image: imageRepository(app, buildDefaults), pushSecret: pushSecretName(app, buildDefaults) };
  problems.push(...previewsProblems(app.spec, production));
  return problems;
}

const BG = 'spec.strategy.blueGreen';

/** Ping-pong slots and the route that switches between them come together (docs/blue-green.md). */
function pingPongProblems(bg: App['spec']['strategy']['blueGreen'], others: string[]): string[] {
  const { pingPong, trafficRouting } = bg;
  if (pingPong && !trafficRouting?.gatewayAPI) {
    return [`${BG}.pingPong: needs ${BG}.trafficRouting.gatewayAPI (the switch between the slots happens there)`];
  }
  if (trafficRouting?.gatewayAPI && !pingPong) {
    return [`${BG}.trafficRouting.gatewayAPI: needs ${BG}.pingPong (its backendRefs are the ping and pong Services)`];
  }
  if (!pingPong) return [];
  const problems: string[] = [];
  if (pingPong.pingService === pingPong.pongService) {
    problems.push(`${BG}.pingPong.pongService: must differ from pingService`);
  }
  for (const [field, name] of Object.entries(pingPong)) {
    if (others.includes(name))
      problems.push(`${BG}.pingPong.${field}: must differ from activeService and previewService`);
  }
  return problems;
}
