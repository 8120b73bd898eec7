// The test control plane's boot on a busy machine: a port picked for a
// component can be taken by another process before the component binds it
// (other control planes booting beside this one), and the boot still succeeds.
// This file starts a cluster of its own, beside the suite's shared one.

import { createServer, type Server } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type Cluster,
  type ClusterPorts,
  clusterPorts,
  kubectlOutput,
  startCluster,
  stopCluster,
} from '../cluster/cluster.ts';

let held: Server | undefined;
let cluster: Cluster | undefined;
afterAll(async () => {
  if (cluster) await stopCluster(cluster);
  held?.close();
});

/** A port held by this process for the test's length, as another cluster's etcd would hold it. */
async function holdAPort(): Promise<number> {
  held = createServer();
  const server = held;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address !== 'object') throw new Error('the held port has no address');
  return address.port;
}

describe('the test control plane', () => {
  it('boots again on other ports when a component finds its port taken', async () => {
    const taken = await holdAPort();
    // The first boot's etcd peer port is taken between the pick and etcd's bind,
    // as in the clash seen beside other clusters; later boots get free ports.
    const boots: ClusterPorts[] = [];
    const ports = async () => {
      const picked = await clusterPorts();
      boots.push(boots.length === 0 ? { ...picked, etcdPeerPort: taken } : picked);
      return boots.at(-1) as ClusterPorts;
    };
    const lines: string[] = [];
    cluster = await startCluster({ name: 'teal-port-clash', ports, log: (line) => lines.push(line) });

    expect(await kubectlOutput(cluster, ['get', '--raw', '/readyz'])).toBe('ok');
    expect(boots).toHaveLength(2);
    expect(lines).toContainEqual(
      expect.stringMatching(`etcd could not listen on 127.0.0.1:${taken}, taken by another`),
    );
  });
});
