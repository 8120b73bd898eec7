// The real-build tests run the build Job's command with a toolchain built from
// Go modules (test/cluster/build-toolchain.sh, versions from versions.env). That
// proves something about the Job only if the toolchain is the one in the Job's
// default images: this keeps the two from drifting apart.
import { describe, expect, it } from 'vitest';
import { DEFAULT_BUILD_IMAGES } from '../../src/build/images.ts';
import { readVersionsEnv } from '../cluster/build-tools.ts';

function tagOf(image: string): string {
  return image.slice(image.lastIndexOf(':') + 1);
}

describe('the real-build toolchain versions', () => {
  const versions = readVersionsEnv();

  it('BuildKit is the version of the default BuildKit image (its rootless variant)', () => {
    expect(versions.get('BUILDKIT_VERSION')).toMatch(/^v\d+\.\d+\.\d+$/);
    expect(tagOf(DEFAULT_BUILD_IMAGES.buildkit)).toBe(`${versions.get('BUILDKIT_VERSION')}-rootless`);
  });

  it('kaniko is the version of the default kaniko image', () => {
    expect(versions.get('KANIKO_VERSION')).toMatch(/^v\d+\.\d+\.\d+$/);
    expect(tagOf(DEFAULT_BUILD_IMAGES.kaniko)).toBe(versions.get('KANIKO_VERSION'));
  });
});
