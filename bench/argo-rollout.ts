// Argo Rollouts as both benches drive it (bench/subjects.ts, the controller
// bench; bench/traffic-columns.ts, the traffic bench): its API, the CRDs its
// controller waits for, how it is started, the blue/green Rollout a user of
// Argo would write, and what `kubectl argo rollouts` reads and writes. One
// place, so that both benches measure the same Argo.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export const ARGO = { group: 'argoproj.io', version: 'v1alpha1', plural: 'rollouts' } as const;
/** The label Argo puts on a revision's pods and in the Services' selectors. */
export const ARGO_HASH = 'rollouts-pod-template-hash';

/** All of them: the controller's informers watch each kind, and wait for them to sync. */
const CRD_KINDS = ['rollout', 'analysis-run', 'analysis-template', 'cluster-analysis-template', 'experiment'];

/** The CRDs' YAML from the folder test/cluster/build-argo.sh printed. */
export function argoCrds(home: string): string[] {
  return CRD_KINDS.map((kind) => readFileSync(join(home, 'crds', `${kind}-crd.yaml`), 'utf8'));
}

/** The controller's command line: namespaced to the bench's namespace, no election, free ports. */
export function argoControllerArgs(kubeconfig: string, namespace: string, ports: { metrics: number; health: number }) {
  return [
    ...['--kubeconfig', kubeconfig, '--namespaced', '--namespace', namespace, '--leader-elect=false'],
    ...[`--metricsPort=${ports.metrics}`, `--healthzPort=${ports.health}`, '--loglevel', 'warn'],
  ];
}

export interface RolloutStatus {
  phase?: string;
  abort?: boolean;
  currentPodHash?: string;
  stableRS?: string;
  controllerPause?: boolean;
  pauseConditions?: { reason?: string }[] | null;
  blueGreen?: { activeSelector?: string; previewSelector?: string };
}

/**
 * A blue/green Rollout of one container, with the Services `name` and `name`-preview, waiting
 * for promotion, a full-size preview; abortScaleDownDelaySeconds only where given (Argo's default otherwise).
 */
export function blueGreenRollout(
  name: string,
  container: Record<string, unknown>,
  delays: { replicas: number; scaleDownDelaySeconds: number; abortScaleDownDelaySeconds?: number },
) {
  const { replicas, scaleDownDelaySeconds, abortScaleDownDelaySeconds } = delays;
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Rollout',
    metadata: { name },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [container] } },
      strategy: {
        blueGreen: {
          activeService: name,
          previewService: `${name}-preview`,
          autoPromotionEnabled: false,
          previewReplicaCount: replicas,
          scaleDownDelaySeconds,
          ...(abortScaleDownDelaySeconds !== undefined ? { abortScaleDownDelaySeconds } : {}),
        },
      },
    },
  };
}

/** What `kubectl argo rollouts get` shows as paused: the BlueGreenPause condition, which Argo sets once the preview is available. */
export function pausedOnPreview(s: RolloutStatus | undefined): boolean {
  return (
    s?.phase === 'Paused' &&
    s.controllerPause === true &&
    (s.pauseConditions ?? []).some((c) => c.reason === 'BlueGreenPause') &&
    s.currentPodHash !== s.stableRS &&
    s.blueGreen?.previewSelector === s.currentPodHash
  );
}

/** The status patch `kubectl argo rollouts promote` writes for a paused blue/green Rollout. */
export const PROMOTE_STATUS = { pauseConditions: null } as const;
