// Steps the end-to-end tests of checks share: a web check, what an App's status
// says, releasing and changing an App in the file's namespace, and the HTTP
// servers that answer web checks.
import type { CheckInput } from '../../src/app/analysis-schema.ts';
import type { AppInput } from '../../src/app/schema.ts';
import { createApp, patchSpec, phase, type StoredApp, waitForApp } from './apps.ts';
import { type Answering, type CheckServer, startCheckServer } from './http-check-server.ts';

/** A web check at `url` that passes when the JSON answered has `ok: true`. */
export function webCheck(name: string, url: string, more: Partial<CheckInput> = {}): CheckInput {
  return { name, successCondition: 'result.ok == true', provider: { web: { url } }, ...more };
}

export const conditionOf = (a: StoredApp, type: string) => a.status?.conditions?.find((c) => c.type === type);

export const activeRevision = (revision: number) => (a: StoredApp) =>
  phase('Healthy')(a) && a.status?.active?.revision === revision;

/**
 * Releasing and changing Apps in a test file's namespace. The namespace is
 * read at each call, since a file creates it in beforeAll, after these are made.
 */
export function appSteps(namespace: () => string) {
  return {
    async released(body: AppInput): Promise<StoredApp> {
      await createApp(namespace(), body);
      return waitForApp(namespace(), body.metadata.name, 'first release Healthy', phase('Healthy'));
    },
    newImage: (name: string, tag: string) =>
      patchSpec(namespace(), name, { image: `registry.example.com/team/web:${tag}` }),
  };
}

/** The check servers a test file starts, to be closed together once the operator has stopped. */
export function checkServers() {
  const servers: CheckServer[] = [];
  return {
    async serve(answering: Answering): Promise<CheckServer> {
      const server = await startCheckServer(answering);
      servers.push(server);
      return server;
    },
    async closeAll(): Promise<void> {
      for (const server of servers) await server.close();
    },
  };
}
