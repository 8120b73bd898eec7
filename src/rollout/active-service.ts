// The active and preview Services as the planner sees and keeps them: what
// the active one serves (its selector, judged: Teal's own switch or someone
// else's edit), and the applies that keep both as they should be.
import { ANN_APPLIED, LABEL_APP } from '../app/labels.ts';
import type { Observed } from './observed.ts';
import type { Planner, Progress, Rollout } from './planner.ts';
import { isOwnSwitch } from './predicates.ts';
import {
  adoptedServiceManifest,
  isAdopted,
  ownedServiceManifest,
  type ServiceManifest,
  selectedHash,
} from './service.ts';

/**
 * What the active Service serves, judged: its selector when it is the one
 * status records or Teal's own interrupted switch; otherwise the revision
 * status records (a hand edit, or a Service someone deleted, is put back).
 */
export function servingHash(p: Planner, r: Rollout): string | undefined {
  const { app, status } = p;
  const recorded = status.active?.podTemplateHash;
  const svc = p.input.observed.activeService;
  if (!svc) return recorded;
  const selected = svc.selector[LABEL_APP] === app.metadata.name ? selectedHash(svc) : undefined;
  if (selected === recorded) return recorded;
  const noteMatches = selected !== undefined && serviceMatches(svc, activeManifest(p, selected));
  if (selected !== undefined && r.byHash.has(selected) && isOwnSwitch(status, selected, noteMatches, r.desired?.hash)) {
    return selected;
  }
  return recorded;
}

/**
 * Keeps both Services as they should be. The active one follows status.active
 * (a hand edit of its selector is put back); the preview one selects the
 * revision in preview, else the active one, so a preview URL never goes dark.
 */
export function reconcileServices(p: Planner, progress: Progress): void {
  const { app, input, status } = p;
  const activeHash = status.active?.podTemplateHash;
  const switched = p.actions.some((a) => a.kind === 'applyService' && a.role === 'active');
  if (!switched && activeHash) {
    const svc = input.observed.activeService;
    const want = activeManifest(p, activeHash);
    if (!svc || !serviceMatches(svc, want)) p.actions.push({ kind: 'applyService', role: 'active', manifest: want });
  }
  const previewHash = progress.previewHash ?? activeHash;
  const preview = input.observed.previewService;
  const want =
    preview && isAdopted(app, preview)
      ? adoptedServiceManifest(app, preview, previewHash)
      : ownedServiceManifest(app, 'preview', previewHash);
  if (previewHash && (!preview || !serviceMatches(preview, want))) {
    p.actions.push({ kind: 'applyService', role: 'preview', manifest: want });
  }
}

export const activeServiceName = (p: Planner) => p.app.spec.strategy.blueGreen.activeService ?? p.app.metadata.name;

export function activeManifest(p: Planner, hash: string | undefined): ServiceManifest {
  const svc = p.input.observed.activeService;
  return svc && isAdopted(p.app, svc)
    ? adoptedServiceManifest(p.app, svc, hash)
    : ownedServiceManifest(p.app, 'active', hash);
}

/** As Teal last applied it: the note of what it applied, and the selector itself (a hand edit leaves the note). */
function serviceMatches(svc: NonNullable<Observed['activeService']>, want: ServiceManifest): boolean {
  const selector = want.spec.selector;
  return (
    svc.appliedHash === want.metadata.annotations[ANN_APPLIED] &&
    Object.keys(svc.selector).length === Object.keys(selector).length &&
    Object.entries(selector).every(([k, v]) => svc.selector[k] === v)
  );
}
