// The one way in: a PreviewHost for spec.previews' provider, API URL and
// repository, or why not (a message naming the field, for InvalidSpec).
import type { PreviewProvider } from '../pull-request.ts';
import { type Checked, checkApiUrl, checkRepository } from './api-url.ts';
import type { HostOptions } from './base.ts';
import { BitbucketHost } from './bitbucket.ts';
import { GiteaHost } from './gitea.ts';
import { GitHubHost } from './github.ts';
import { GitLabHost } from './gitlab.ts';
import type { PreviewHost } from './host.ts';

export interface HostSpec {
  provider: PreviewProvider;
  /** Absent: the provider's public service (required for gitea). */
  apiUrl?: string;
  repository: string;
  token: string;
  /** namespace/name of the parent App. */
  appKey: string;
}

export type HostDeps = Omit<HostOptions, 'provider' | 'apiUrl' | 'repository' | 'token' | 'appKey'>;

const HOSTS: Readonly<Record<PreviewProvider, new (o: HostOptions) => PreviewHost>> = {
  github: GitHubHost,
  gitlab: GitLabHost,
  gitea: GiteaHost,
  bitbucket: BitbucketHost,
};

export function previewHost(spec: HostSpec, deps: HostDeps = {}, field = 'spec.previews'): Checked<PreviewHost> {
  const apiUrl = checkApiUrl(spec.apiUrl, spec.provider, `${field}.apiURL`);
  if (!apiUrl.ok) return apiUrl;
  const repository = checkRepository(spec.repository, spec.provider, `${field}.repository`);
  if (!repository.ok) return repository;
  if (spec.token.trim() === '' || /[\r\n]/.test(spec.token.trim())) {
    return { ok: false, message: `${field}: the token Secret's value is empty or not one line` };
  }
  const Host = HOSTS[spec.provider];
  const options = { ...deps, provider: spec.provider, apiUrl: apiUrl.value, repository: repository.value };
  return { ok: true, value: new Host({ ...options, token: spec.token.trim(), appKey: spec.appKey }) };
}

export type { CommentAction, HostFailure, HostResult, LabelAddition, PreviewHost } from './host.ts';
export { mayApprove } from './host.ts';
export type { Budget, ProviderMetrics } from './http.ts';
