// The dashboard's row of an App (issue #25): a small projection, about 300
// bytes, of what the Apps table and its filters read. The operator computes it
// from its informer cache and streams it (src/api/stream*.ts); the browser
// keeps the rows it was sent and builds its table from them (src/ui/rows.ts).
// Type imports only: the UI bundles this file, and must not pull zod with it.
import type { AppStatus } from './schema.ts';

/** How the preview revision's pre-promotion checks stand: none when the App has none. */
export const PREVIEW_CHECKS = ['none', 'running', 'passed', 'failed'] as const;
export type PreviewChecks = (typeof PREVIEW_CHECKS)[number];

export interface DashboardRow {
  namespace: string;
  name: string;
  /** The App's resourceVersion: a page showing more of the App reads it again when this changes. */
  version: string;
  /** Empty when the operator has not written one yet. */
  phase: string;
  /** At most MESSAGE_LIMIT characters; the App page shows it whole. */
  message: string;
  active?: number;
  preview?: number;
  /** With a preview only: whether its checks let it be promoted (the "waiting for me" filter). */
  previewChecks?: PreviewChecks;
  /** The App is being deleted. */
  deleting?: true;
  /**
   * How many times what the App page shows beside the App (its ReplicaSets' pods, its Events)
   * changed while the App did not, as the stream's operator counted (absent: none). A page
   * showing them reads them again when this changes.
   */
  detail?: number;
}

/** A row's message is cut here: the row stays small whatever a message holds. */
export const MESSAGE_LIMIT = 200;

/** What the projection reads of an App: its metadata, its status read leniently, and its spec as stored. */
export interface RowSource {
  metadata: { namespace: string; name: string; resourceVersion: string; deletionTimestamp?: string };
  status: AppStatus;
  spec?: unknown;
}

/** The key of an App's row, as the informer keys it. */
export const rowKey = (row: { namespace: string; name: string }): string => `${row.namespace}/${row.name}`;

/** Whether the App's spec names pre-promotion checks (spec is input: anything else reads as no). */
function hasPrePromotionChecks(spec: unknown): boolean {
  const strategy = (spec as { strategy?: { blueGreen?: { prePromotionAnalysis?: unknown } } } | undefined)?.strategy;
  const analysis = strategy?.blueGreen?.prePromotionAnalysis;
  return typeof analysis === 'object' && analysis !== null;
}

/**
 * The checks of the preview revision: passed only by a successful run of that very revision,
 * failed by a run of it that ended otherwise, running until then (a run not started yet too).
 */
export function previewChecksOf(status: AppStatus, spec: unknown): PreviewChecks | undefined {
  const preview = status.preview;
  if (!preview) return undefined;
  if (!hasPrePromotionChecks(spec)) return 'none';
  const run = status.prePromotionAnalysis;
  if (!run || run.revision !== preview.revision || run.podTemplateHash !== preview.podTemplateHash) return 'running';
  if (run.phase === 'Running') return 'running';
  return run.phase === 'Successful' ? 'passed' : 'failed';
}

const cut = (text: string) => (text.length > MESSAGE_LIMIT ? `${text.slice(0, MESSAGE_LIMIT - 1)}…` : text);

/** The row of an App. */
export function dashboardRow({ metadata, status, spec }: RowSource): DashboardRow {
  const checks = previewChecksOf(status, spec);
  return {
    namespace: metadata.namespace,
    name: metadata.name,
    version: metadata.resourceVersion,
    phase: status.phase ?? '',
    message: cut(status.message ?? ''),
    ...(status.active ? { active: status.active.revision } : {}),
    ...(status.preview ? { preview: status.preview.revision } : {}),
    ...(checks !== undefined ? { previewChecks: checks } : {}),
    ...(metadata.deletionTimestamp !== undefined ? { deleting: true as const } : {}),
  };
}

/** A preview that waits only for someone to promote it: its checks passed, or it has none. */
export const awaitsPromotion = (row: DashboardRow): boolean =>
  row.preview !== undefined && (row.previewChecks === 'passed' || row.previewChecks === 'none');

/**
 * "Waiting for me" (issue #25 item 4): a preview this user may promote and whose checks passed.
 * The one place its two facts meet: the row awaits a promote (awaitsPromotion above), in a
 * namespace where RBAC lets the user promote (GET /api/v1/permissions says which).
 */
export const waitingFor = (
  row: { namespace: string; awaitsPromotion: boolean },
  promoteIn: ReadonlySet<string>,
): boolean => row.awaitsPromotion && promoteIn.has(row.namespace);
