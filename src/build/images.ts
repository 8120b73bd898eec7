// The images that run builds, one per engine, and the operator's defaults for
// them (--buildkit-image, --kaniko-image). Apart from job.ts so the operator's
// flag parsing can name the defaults without loading the App schema.

export interface BuildImages {
  buildkit: string;
  kaniko: string;
}

export const DEFAULT_BUILD_IMAGES: BuildImages = {
  buildkit: 'moby/buildkit:v0.26.2-rootless',
  kaniko: 'gcr.io/kaniko-project/executor:v1.23.2',
};
