// `kubectl teal set image APP IMAGE`: a merge patch of spec.image, for Apps
// that deploy a ready image. An App built from git takes its image from its
// builds, so there it is refused rather than turned into a spec the API
// server would reject (image and source are exclusive).
import { IMAGE_REFERENCE } from '../../app/patterns.ts';
import { CliError, EXIT, UsageError } from '../errors.ts';
import type { Flags } from '../flags.ts';
import { Session } from '../kube.ts';

const SPEC_WRITE = 'needs "update" and "patch" on apps.teal.dev, e.g. the teal-admin role';

export async function setImage(args: string[], flags: Flags): Promise<number> {
  const [name = '', image = ''] = args;
  if (!IMAGE_REFERENCE.test(image) || image.length > 512) {
    throw new UsageError(
      `"${image}" is not an image reference such as repo/app:1.4.2 or repo/app@sha256:<digest>`,
      'set',
    );
  }
  const session = new Session(flags);
  const app = await session.getApp(name, 'set the image of');
  if (app.spec.source || app.spec.build) {
    const url = app.spec.source?.git?.url;
    throw new CliError(
      `App "${name}" is built from git${url ? ` (${url})` : ''}: its image comes from its builds. Push a commit instead, or change spec.build`,
    );
  }
  if (app.spec.image === image) {
    process.stdout.write(`app "${name}" already has image ${image}: nothing changed\n`);
    return EXIT.ok;
  }
  // A spec change needs update, not only the patch the plugin uses: the admission
  // policy (config/policy/intents.yaml) refuses it otherwise, so say so before writing.
  if ((await session.canI('update', name)) === false) {
    throw new CliError(
      `user "${await session.whoami()}" cannot set the image of apps.teal.dev "${name}" in namespace "${session.namespace}" (RBAC: ${SPEC_WRITE})`,
      EXIT.error,
      403,
    );
  }
  await session.patchApp(app, { spec: { image } }, 'set the image of', SPEC_WRITE);
  process.stdout.write(`app "${name}" image set to ${image} (was ${app.spec.image ?? 'unset'})\n`);
  return EXIT.ok;
}
