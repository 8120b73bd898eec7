// The worker thread condition-pool.ts judges measurements in: the operator's main
// thread never evaluates a condition, so one that runs for long (its own 250 ms
// watchdog, or the pool's kill at its deadline) holds no probe, lease renewal or
// reconcile. The bundle builds this file as its own entry, dist/condition-worker.js
// beside dist/teal.js (scripts/bundle.ts): it holds the CEL library and nothing else.
import { parentPort } from 'node:worker_threads';
import { judge } from './condition.ts';
import type { JudgeAnswer, JudgeTask } from './condition-pool.ts';

const port = parentPort;
if (!port) throw new Error('condition-worker.ts runs as a worker thread of condition-pool.ts');

port.on('message', ({ id, result, success, failure }: JudgeTask) => {
  const started = performance.now();
  const judgement = judge(result, success, failure);
  const answer: JudgeAnswer = { id, judgement, ms: performance.now() - started };
  port.postMessage(answer);
});
// Loaded: the pool starts a task's deadline only from here, so a cold start is not charged to it.
port.postMessage('ready');
