// The world most e2e files test in: a namespace of their own, the operator
// watching it, and invariant 1 (apps.ts watchActiveServices) watched on its
// active Services. One place for the order it is taken down in: the watch,
// the operator, then the namespace.
import { watchActiveServices } from './apps.ts';
import { createNamespace } from './kube.ts';
import { type Operator, type OperatorOptions, startOperator } from './operator.ts';

export type Invariant = Awaited<ReturnType<typeof watchActiveServices>>;

export interface OperatorNamespace {
  ns: string;
  /** The operator running now: the last one startOperator started. */
  operator: Operator;
  invariant: Invariant;
  /** Starts the operator on the namespace (again, after a test killed it); stop() stops this one. */
  startOperator: () => Promise<Operator>;
  stop: () => Promise<void>;
}

export async function operatorNamespace(
  prefix: string,
  options: Omit<OperatorOptions, 'namespace'> = {},
): Promise<OperatorNamespace> {
  const { name: ns, remove } = await createNamespace(prefix);
  const invariant = await watchActiveServices(ns);
  const start = () => startOperator({ ...options, namespace: ns });
  const world: OperatorNamespace = {
    ns,
    operator: await start(),
    invariant,
    startOperator: async () => {
      world.operator = await start();
      return world.operator;
    },
    stop: async () => {
      invariant.stop();
      await world.operator.stop();
      await remove();
    },
  };
  return world;
}
