// Teal's blue/green switch seen by a client (issue #26 §3, the quick form of
// make bench-traffic): requests sent all along through kube-proxy's ClusterIP
// of the active Service, on the real data plane, while the operator promotes,
// undoes and aborts, a few times each. Teal's plain selector switch loses no
// request, and no request is answered by a revision that was not supposed to
// serve (bench/traffic-verdict.ts says which).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Column, tealPlain } from '../../bench/traffic-columns.ts';
import { runScenario, type Scenario } from '../../bench/traffic-scenario.ts';
import { type DataPlane, dataPlaneSkipReason, startTestDataPlane } from '../support/data-plane.ts';
import { clients, createNamespace, kubeConfig, WAIT_MS } from '../support/kube.ts';
import { type Operator, startOperator } from '../support/operator.ts';

const skip = dataPlaneSkipReason();
const SWITCHES = 2;

describe.skipIf(skip !== undefined)(`a client through the switch${skip ? ` (skipped: ${skip})` : ''}`, () => {
  let ns: string;
  let removeNs: (() => Promise<void>) | undefined;
  let dp: DataPlane | undefined;
  let operator: Operator | undefined;
  let column: Column;

  beforeAll(async () => {
    const created = await createNamespace('traffic');
    ns = created.name;
    removeNs = created.remove;
    dp = await startTestDataPlane([ns]);
    operator = await startOperator({ namespace: ns });
    column = tealPlain(
      {
        clients: { core: clients().core, custom: kubeConfig().makeApiClient(CustomObjectsApi) },
        kubeconfig: '',
        logDir: mkdtempSync(join(tmpdir(), 'teal-traffic-switch-')),
        // Each switch waits for the old revision's pods to be gone; long enough that the undo comes
        // while the revision it returns to is still up, as the scenario means.
        scaleDownDelaySeconds: 10,
      },
      ns,
    );
  });

  afterAll(async () => {
    await operator?.stop();
    await dp?.stop();
    await removeNs?.();
  });

  const noKill = {
    killAndRestart: () => Promise.reject(new Error('this test kills no operator')),
  };

  it.each(['promote', 'undo', 'abort'] satisfies Scenario[])(
    "%s: behind kube-proxy's ClusterIP no request fails and none is answered by a revision not supposed to serve",
    async (scenario) => {
      if (!dp) throw new Error('no data plane');
      const result = await runScenario(column, scenario, dp, noKill, {
        switches: SWITCHES,
        rps: 50,
        // Generous: the loop's answers come from pods served in one process on a busy machine.
        timeoutMs: 20_000,
        waitMs: WAIT_MS,
        calmMs: 0,
        log: (line) => console.error(line),
      });
      console.error(`traffic-switch ${scenario}: ${JSON.stringify(result)}`);
      expect(result.error).toBeUndefined();
      expect(result.switches).toBe(SWITCHES);
      const [clusterIP] = result.paths;
      expect(clusterIP?.path).toBe('clusterIP');
      const { measured, setup } = clusterIP?.verdict ?? {};
      // Traffic went on through every switch.
      expect(measured?.requests).toBeGreaterThan(0);
      expect({ failed: measured?.failed, causes: measured?.causes }).toEqual({ failed: 0, causes: {} });
      expect({ wrong: measured?.wrong, revisions: measured?.wrongRevisions }).toEqual({ wrong: 0, revisions: {} });
      expect({ failed: setup?.failed, wrong: setup?.wrong }).toEqual({ failed: 0, wrong: 0 });
    },
    10 * WAIT_MS,
  );
});
