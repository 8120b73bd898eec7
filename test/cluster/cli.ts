// The local control plane from the command line.
//   cluster.ts build   build or reuse the cached binaries
//   cluster.ts up      start a cluster with the App CRD and the operator,
//                      print how to use it, and stop both on Ctrl-C
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureBinaries, kubectlApply, startCluster, stopCluster, stopClusterSync } from './cluster.ts';

const log = (line: string) => console.error(line);
const root = fileURLToPath(new URL('../..', import.meta.url));

async function up(): Promise<void> {
  const started = Date.now();
  // A fixed folder keeps the kubeconfig path stable between runs.
  const workdir = join(
    process.env.TEAL_CACHE_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'teal'),
    'dev',
  );
  const binDir = await ensureBinaries(log);
  await stopCluster({ name: 'teal-dev', workdir, binDir });
  const cluster = await startCluster({ name: 'teal-dev', workdir, log });
  const stop = () => {
    log('\nstopping the local control plane');
    stopClusterSync(cluster);
    process.exit(0);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  await kubectlApply(cluster, readFileSync(join(root, 'config/crd/teal.dev_apps.yaml'), 'utf8'));
  const operator = spawn(
    process.execPath,
    [join(root, 'src/main.ts'), '--kubeconfig', cluster.kubeconfig, '--leader-elect=false', '--allow-file-git'],
    { stdio: ['ignore', 'inherit', 'inherit'] },
  );
  operator.once('exit', (code) => {
    if (code !== null && code !== 0) log(`the operator exited with code ${code}`);
  });
  process.once('exit', () => operator.kill('SIGTERM'));
  console.log(`
Teal is up in ${((Date.now() - started) / 1000).toFixed(1)}s: a real kube-apiserver, etcd, controller-manager and
scheduler on 127.0.0.1 with pods simulated by KWOK, the App CRD, and the operator (its logs follow).

In another shell:
  export KUBECONFIG=${cluster.kubeconfig}
  export PATH=${join(root, 'bin')}:${cluster.binDir}:$PATH     # kubectl v1.36 and kubectl teal
  kubectl apply -f config/samples/app-image.yaml
  kubectl get apps.teal.dev -w
  kubectl patch app hello --type merge -p '{"spec":{"image":"registry.example.com/team/hello:2.0.0"}}'
  kubectl teal get hello
  kubectl teal promote hello

Ctrl-C stops the operator and the cluster, and removes them.`);
  // kwokctl runs the components detached; this process stays to stop them.
  setInterval(() => {}, 1 << 30);
}

const command = process.argv[2];
if (command === 'build') {
  console.log(await ensureBinaries(log));
} else if (command === 'up') {
  await up();
} else {
  console.error('usage: cluster.ts build|up');
  process.exit(2);
}
