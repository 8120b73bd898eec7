// The child App of one pull request: an ordinary App that follows the pull
// request's head at its full SHA, built with the previews' own registry and
// credentials, shaped by the parent App and spec.previews, never by the pull
// request (issue #28 items 3, 4, 5). Owned by the parent, so deleting the
// parent collects every preview.
import { podTemplateHash } from '../app/hash.ts';
import { LABEL_MANAGED_BY, MANAGED_BY } from '../app/labels.ts';
import { type OwnedMetadata, ownerReference } from '../app/owner.ts';
import {
  ANN_ACTIVE_AT,
  ANN_PR_HEAD,
  ANN_PR_REF,
  ANN_PR_URL,
  ANN_PREVIEW_SPEC,
  LABEL_PREVIEW_OF,
  LABEL_PULL_REQUEST,
} from '../app/preview-labels.ts';
import type { Previews } from '../app/previews-schema.ts';
import { safeWebUrl } from '../app/previews-view.ts';
import { API_VERSION, type App, type AppSpec, KIND } from '../app/schema.ts';
import { previewName } from './names.ts';
import type { PullRequest } from './pull-request.ts';
import { previewTemplate } from './template.ts';

/** A preview keeps few revisions: each is a pull request commit already superseded. */
export const PREVIEW_HISTORY_LIMIT = 2;

/** What the planner writes of a child App: all of it but status. */
export interface ChildApp {
  apiVersion: typeof API_VERSION;
  kind: typeof KIND;
  metadata: OwnedMetadata;
  spec: AppSpec;
}

/** One preview as the planner wants it. */
export interface ChildWanted {
  pr: PullRequest;
  /** The commit it builds: the pull request's head, or for a fork awaiting approval, the one last approved. */
  head: string;
  /** The ref that commit is fetched from. */
  headRef: string;
  awake: boolean;
  /** The clock of sleepAfter and deleteAfter (ms since the epoch). */
  activeAt: number;
}

/** The child's spec: the parent's, with the source pinned, the previews' registry, and no production wiring. */
export function childSpec(parent: App, previews: Previews, wanted: ChildWanted): AppSpec {
  const { spec } = parent;
  const git = spec.source?.git;
  const bg = spec.strategy.blueGreen;
  return {
    source: {
      git: {
        url: git?.url ?? '',
        // The exact commit: a later push to the pull request is built only once the planner has seen (and, for a fork, approved) it.
        ref: wanted.head,
        path: git?.path ?? '.',
        ...(git?.secretRef ? { secretRef: git.secretRef } : {}),
        pollInterval: '0',
      },
    },
    build: {
      image: previews.build.image,
      dockerfile: spec.build?.dockerfile ?? 'Dockerfile',
      engine: spec.build?.engine ?? 'buildkit',
      pushSecretRef: previews.build.pushSecretRef,
      timeout: spec.build?.timeout ?? '15m',
    },
    replicas: wanted.awake ? previews.replicas : 0,
    template: previewTemplate(spec.template, previews),
    ...(spec.service ? { service: spec.service } : {}),
    // The child's own Services (<name>, <name>-preview): none of the parent's Services, routes or gates.
    strategy: {
      blueGreen: {
        autoPromotionEnabled: true,
        autoPromotionSeconds: 0,
        scaleDownDelaySeconds: bg.scaleDownDelaySeconds,
        abortScaleDownDelaySeconds: bg.abortScaleDownDelaySeconds,
        ...(bg.prePromotionAnalysis ? { prePromotionAnalysis: bg.prePromotionAnalysis } : {}),
      },
    },
    revisionHistoryLimit: PREVIEW_HISTORY_LIMIT,
    progressDeadlineSeconds: spec.progressDeadlineSeconds,
    paused: false,
    revisionEnv: spec.revisionEnv,
  };
}

/** The child App in full, with the hash of what it says (ANN_PREVIEW_SPEC) to write it again only on change. */
export function childApp(parent: App, previews: Previews, wanted: ChildWanted): ChildApp {
  const url = safeWebUrl(wanted.pr.webUrl);
  const labels = {
    [LABEL_PREVIEW_OF]: parent.metadata.name,
    [LABEL_PULL_REQUEST]: String(wanted.pr.number),
    [LABEL_MANAGED_BY]: MANAGED_BY,
  };
  const annotations: Record<string, string> = {
    [ANN_PR_HEAD]: wanted.head,
    [ANN_PR_REF]: wanted.headRef,
    ...(url ? { [ANN_PR_URL]: url } : {}),
    [ANN_ACTIVE_AT]: new Date(wanted.activeAt).toISOString(),
  };
  const spec = childSpec(parent, previews, wanted);
  annotations[ANN_PREVIEW_SPEC] = podTemplateHash('teal.dev/preview', { labels, annotations, spec });
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: {
      name: previewName(parent.metadata.name, wanted.pr.number),
      namespace: parent.metadata.namespace ?? 'default',
      labels,
      annotations,
      ownerReferences: [ownerReference(parent)],
    },
    spec,
  };
}
