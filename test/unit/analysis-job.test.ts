import { describe, expect, it } from 'vitest';
import { builtinEnv } from '../../src/analysis/args.ts';
import {
  ANN_ANALYSIS_KEY,
  analysisJobManifest,
  analysisJobName,
  analysisRunLabel,
  analysisRunSelector,
  isAnalysisJobFor,
  jobMeasurement,
  LABEL_ANALYSIS,
  LABEL_ANALYSIS_CHECK,
  runIdOf,
} from '../../src/analysis/job.ts';
import { type Check, type CheckInput, CheckSchema, MAX_MESSAGE_LENGTH } from '../../src/app/analysis-schema.ts';
import { API_VERSION, KIND } from '../../src/app/schema.ts';

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

const app = { name: 'weather', namespace: 'team-a', uid: 'uid-1' };
const env = builtinEnv({
  appName: 'weather',
  appNamespace: 'team-a',
  previewService: 'weather-preview',
  previewRevision: 7,
  previewImage: 'registry.local/weather@sha256:abc',
  sourceCommit: 'a3f1c2d4e5f60718293a4b5c6d7e8f9012345678',
});

function jobCheck(job: Record<string, unknown> = {}, overrides: Partial<CheckInput> = {}): Check {
  return CheckSchema.parse({
    name: 'smoke',
    provider: {
      job: {
        spec: {
          template: {
            spec: { containers: [{ name: 'test', image: 'curl:8', args: ['-f', 'http://weather-preview/healthz'] }] },
          },
        },
        ...job,
      },
    },
    ...overrides,
  });
}

const condition = (type: string, status = 'True', reason?: string, message?: string) => ({
  status: { conditions: [{ type, status, ...(reason ? { reason } : {}), ...(message ? { message } : {}) }] },
});

describe('analysisJobName', () => {
  it('is stable for a key, so a restarted executor finds the same Job', () => {
    expect(analysisJobName('weather', 'pre-3/smoke/1')).toBe(analysisJobName('weather', 'pre-3/smoke/1'));
  });

  it('differs for distinct keys and for distinct Apps', () => {
    const keys = ['pre-3/smoke/1', 'pre-3/smoke/2', 'pre-3/load/1', 'pre-4/smoke/1', 'post-3/smoke/1'];
    const names = new Set(keys.map((k) => analysisJobName('weather', k)));
    expect(names.size).toBe(keys.length);
    expect(analysisJobName('weather', 'pre-3/smoke/1')).not.toBe(analysisJobName('storm', 'pre-3/smoke/1'));
  });

  it('is a DNS-1123 label of at most 63 characters, even for the longest App name', () => {
    const longest = `a${'b'.repeat(61)}c`;
    for (const name of ['w', 'weather', longest, `${longest.slice(0, 40)}`, `${longest.slice(0, 41)}`]) {
      const job = analysisJobName(name, `${'r'.repeat(63)}/${'c'.repeat(63)}/10000`);
      expect(job.length).toBeLessThanOrEqual(63);
      expect(job).toMatch(DNS1123_LABEL);
    }
    // Two long names that share their first 33 characters still get distinct prefixes.
    expect(analysisJobName(`${longest.slice(0, 50)}x`, 'k/c/1')).not.toBe(
      analysisJobName(`${longest.slice(0, 50)}y`, 'k/c/1'),
    );
  });
});

describe('run labels', () => {
  it('takes the run id from the key and uses it as the label when it is a label value', () => {
    expect(runIdOf('pre-3/smoke/1')).toBe('pre-3');
    expect(analysisRunLabel('pre-3')).toBe('pre-3');
    expect(analysisRunSelector('weather', 'pre-3')).toBe('teal.dev/app=weather,teal.dev/analysis=pre-3');
  });

  it('hashes a run id that is no label value', () => {
    const label = analysisRunLabel('pre/3:x');
    expect(label).toMatch(/^run-[0-9a-f]{16}$/);
    expect(analysisRunLabel('pre/3:x')).toBe(label);
    expect(runIdOf('pre/3:x/smoke/2')).toBe('pre/3:x');
  });
});

describe('analysisJobManifest', () => {
  const manifest = analysisJobManifest({ app, key: 'pre-3/smoke/1', check: jobCheck(), env });

  it('names, labels and owns the Job, and records the key', () => {
    expect(manifest.apiVersion).toBe('batch/v1');
    expect(manifest.kind).toBe('Job');
    expect(manifest.metadata.name).toBe(analysisJobName('weather', 'pre-3/smoke/1'));
    expect(manifest.metadata.namespace).toBe('team-a');
    const labels = {
      'teal.dev/app': 'weather',
      [LABEL_ANALYSIS]: 'pre-3',
      [LABEL_ANALYSIS_CHECK]: 'smoke',
      'app.kubernetes.io/managed-by': 'teal',
    };
    expect(manifest.metadata.labels).toEqual(labels);
    expect(manifest.spec.template.metadata.labels).toEqual(labels);
    expect(manifest.metadata.annotations).toEqual({ [ANN_ANALYSIS_KEY]: 'pre-3/smoke/1' });
    expect(manifest.metadata.ownerReferences).toEqual([
      {
        apiVersion: API_VERSION,
        kind: KIND,
        name: 'weather',
        uid: 'uid-1',
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
  });

  it("takes the schema's defaults: no backoffLimit (Kubernetes'), a 600 s deadline, restartPolicy Never", () => {
    expect(manifest.spec).not.toHaveProperty('backoffLimit');
    expect(manifest.spec.activeDeadlineSeconds).toBe(600);
    expect(manifest.spec.template.spec.restartPolicy).toBe('Never');
  });

  it('takes backoffLimit, activeDeadlineSeconds, the service account and metadata from the check', () => {
    const check = jobCheck({
      metadata: { labels: { team: 'a', 'teal.dev/app': 'spoofed' }, annotations: { note: 'x' } },
      spec: {
        backoffLimit: 0,
        activeDeadlineSeconds: 30,
        template: {
          metadata: { labels: { 'kwok.teal.dev/analysis-outcome': 'fail' }, annotations: { pod: 'y' } },
          spec: { serviceAccountName: 'checker', containers: [{ name: 'test', image: 'curl:8' }] },
        },
      },
    });
    const m = analysisJobManifest({ app, key: 'pre-3/smoke/2', check, env });
    expect(m.spec.backoffLimit).toBe(0);
    expect(m.spec.activeDeadlineSeconds).toBe(30);
    expect(m.spec.template.spec.serviceAccountName).toBe('checker');
    // Teal's own labels win over the user's: selection and adoption rely on them.
    expect(m.metadata.labels).toMatchObject({ team: 'a', 'teal.dev/app': 'weather' });
    expect(m.metadata.annotations).toEqual({ note: 'x', [ANN_ANALYSIS_KEY]: 'pre-3/smoke/2' });
    expect(m.spec.template.metadata.labels).toMatchObject({
      'kwok.teal.dev/analysis-outcome': 'fail',
      'teal.dev/app': 'weather',
    });
    expect(m.spec.template.metadata.annotations).toEqual({ pod: 'y' });
  });

  it("adds the built-in env to every container after the user's, replacing a user variable of the same name", () => {
    const check = jobCheck({
      spec: {
        template: {
          spec: {
            containers: [
              {
                name: 'a',
                image: 'curl:8',
                command: ['sh'],
                env: [
                  { name: 'MODE', value: 'fast' },
                  { name: 'TEAL_PREVIEW_SERVICE', value: 'elsewhere' },
                  { name: 'TOKEN', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } },
                ],
              },
              { name: 'b', image: 'busybox' },
            ],
          },
        },
      },
    });
    const [a, b] = analysisJobManifest({ app, key: 'pre-3/smoke/1', check, env }).spec.template.spec.containers;
    expect(a).toEqual({
      name: 'a',
      image: 'curl:8',
      command: ['sh'],
      env: [
        { name: 'MODE', value: 'fast' },
        { name: 'TOKEN', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } },
        ...env,
      ],
    });
    expect(b).toEqual({ name: 'b', image: 'busybox', env });
    expect(env.map((e) => e.name)).toEqual([
      'TEAL_PREVIEW_SERVICE',
      'TEAL_PREVIEW_REVISION',
      'TEAL_PREVIEW_IMAGE',
      'TEAL_APP_NAME',
      'TEAL_APP_NAMESPACE',
      'TEAL_SOURCE_COMMIT',
    ]);
  });

  it('refuses a check without a job provider', () => {
    const web = CheckSchema.parse({ name: 'web', provider: { web: { url: 'http://127.0.0.1:8080/' } } });
    expect(() => analysisJobManifest({ app, key: 'pre-3/web/1', check: web, env })).toThrow(/no job provider/);
  });
});

describe('isAnalysisJobFor', () => {
  const manifest = analysisJobManifest({ app, key: 'pre-3/smoke/1', check: jobCheck(), env });

  it('adopts the Job made for this key and App only', () => {
    expect(isAnalysisJobFor(manifest, 'weather', 'pre-3/smoke/1')).toBe(true);
    expect(isAnalysisJobFor(manifest, 'weather', 'pre-3/smoke/2')).toBe(false);
    expect(isAnalysisJobFor(manifest, 'storm', 'pre-3/smoke/1')).toBe(false);
    // A Job by that name that Teal did not make for this key: someone else's.
    expect(isAnalysisJobFor({ metadata: { labels: manifest.metadata.labels } }, 'weather', 'pre-3/smoke/1')).toBe(
      false,
    );
  });
});

describe('jobMeasurement', () => {
  it('is undefined while the Job runs', () => {
    expect(jobMeasurement({})).toBeUndefined();
    expect(jobMeasurement({ status: {} })).toBeUndefined();
    expect(jobMeasurement(condition('Complete', 'False'))).toBeUndefined();
    // Kubernetes sets these before the final condition; the measurement waits for that.
    expect(jobMeasurement(condition('SuccessCriteriaMet'))).toBeUndefined();
    expect(jobMeasurement(condition('FailureTarget', 'True', 'BackoffLimitExceeded'))).toBeUndefined();
  });

  it('is Successful when the Job completes', () => {
    expect(jobMeasurement(condition('Complete'))).toEqual({ phase: 'Successful', message: 'the Job completed' });
  });

  it("is Failed with the Job's reason and message when it fails", () => {
    expect(
      jobMeasurement(
        condition('Failed', 'True', 'BackoffLimitExceeded', 'Job has reached the specified backoff limit'),
      ),
    ).toEqual({
      phase: 'Failed',
      message: 'the Job failed: BackoffLimitExceeded: Job has reached the specified backoff limit',
    });
    expect(jobMeasurement(condition('Failed', 'True', 'DeadlineExceeded'))).toEqual({
      phase: 'Failed',
      message: 'the Job failed: DeadlineExceeded',
    });
    expect(jobMeasurement(condition('Failed'))).toEqual({ phase: 'Failed', message: 'the Job failed' });
  });

  it('bounds the message', () => {
    const result = jobMeasurement(condition('Failed', 'True', 'PodFailurePolicy', 'x'.repeat(5000)));
    expect(result?.phase).toBe('Failed');
    expect(result?.message?.length).toBe(MAX_MESSAGE_LENGTH);
    expect(result?.message?.endsWith('…')).toBe(true);
  });
});
