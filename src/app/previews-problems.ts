// Checks of spec.previews that its schema cannot express, each naming the field:
// the reconciler's InvalidSpec (rollout/spec-problems.ts) reports them, and the
// previews planner plans nothing for an App that has any.
import { DEFAULT_API_URLS, HOST_PLACEHOLDERS, type Previews } from './previews-schema.ts';

const P = 'spec.previews';

/** The parts of an App's spec the previews rules read. */
export interface PreviewsSpecView {
  source?: { git: { url: string } } | undefined;
  previews?: Previews | undefined;
}

/** The repository at the provider: spec.previews.repository, else the path of the git URL, without .git. */
export function previewsRepository(spec: {
  source?: { git: { url: string } } | undefined;
  previews?: { repository?: string | undefined } | undefined;
}): string | undefined {
  if (spec.previews?.repository) return spec.previews.repository;
  const url = spec.source?.git.url;
  if (url === undefined || url.startsWith('file:')) return undefined;
  // https://host[:port]/path, ssh://[user@]host[:port]/path or user@host:path (the schema allows only these).
  const path = /^[a-z]+:\/\/[^/]+\/(.+)$/.exec(url)?.[1] ?? /^[^/:]+@[^/:]+:(.+)$/.exec(url)?.[1];
  const clean = path?.replace(/\/+$/, '').replace(/\.git$/, '');
  return clean?.includes('/') ? clean : undefined;
}

/** The provider's API: spec.previews.apiURL, else the provider's public one. */
export function previewsApiUrl(previews: Pick<Previews, 'provider' | 'apiURL'>): string | undefined {
  return previews.apiURL ?? DEFAULT_API_URLS[previews.provider];
}

/** Why a host template cannot name one host per pull request, if it cannot. */
export function hostTemplateProblem(template: string): string | undefined {
  const names = [...template.matchAll(/\{\{([^{}]*)\}\}/g)].map((m) => m[1] ?? '');
  const unknown = names.find((n) => !(HOST_PLACEHOLDERS as readonly string[]).includes(n));
  if (unknown !== undefined)
    return `unknown placeholder {{${unknown}}}: use ${HOST_PLACEHOLDERS.map((n) => `{{${n}}}`).join(', ')}`;
  if (/[{}]/.test(template.replace(/\{\{[a-z]+\}\}/g, ''))) return 'a brace outside a {{placeholder}}';
  if (!names.includes('number') && !names.includes('name'))
    return 'needs {{number}} or {{name}}: one host per pull request';
  if (template.startsWith('.') || template.endsWith('.') || template.includes('..')) return 'an empty label';
  return undefined;
}

function exposureProblems(previews: Previews): string[] {
  const { ingress, httpRoute } = previews.exposure ?? {};
  const [field, template] = ingress ? ['ingress.host', ingress.host] : ['httpRoute.hostname', httpRoute?.hostname];
  const problem = template === undefined ? undefined : hostTemplateProblem(template);
  return problem ? [`${P}.exposure.${field}: ${problem}`] : [];
}

/** Only the Secrets listed for previews are reachable from a preview, the patch's included. */
function patchSecretProblems(previews: Previews): string[] {
  return (previews.templatePatch?.env ?? []).flatMap((env, i) => {
    const name = env.valueFrom?.secretKeyRef.name;
    return name === undefined || previews.secrets.includes(name)
      ? []
      : [`${P}.templatePatch.env[${i}].valueFrom.secretKeyRef.name: "${name}" is not one of ${P}.secrets`];
  });
}

/** Where the parent App's own builds push: its repository and push Secret, its own or the operator's defaults. */
export interface ProductionPush {
  image?: string | undefined;
  pushSecret?: string | undefined;
}

/** Previews push apart from production: another repository, other credentials. */
function buildProblems(previews: Previews, production: ProductionPush): string[] {
  const problems: string[] = [];
  if (previews.build.image === production.image) {
    problems.push(
      `${P}.build.image: must differ from the App's own build image: previews never push to production's repository`,
    );
  }
  if (previews.build.pushSecretRef.name === production.pushSecret) {
    problems.push(
      `${P}.build.pushSecretRef: must differ from the App's own push Secret: previews never get production's credentials`,
    );
  }
  return problems;
}

/** What is wrong with spec.previews beyond its schema; empty when it is absent or fine. */
export function previewsProblems(spec: PreviewsSpecView, production: ProductionPush): string[] {
  const previews = spec.previews;
  if (!previews) return [];
  if (!spec.source) return [`${P}: needs spec.source: a preview builds the pull request's code`];
  const problems: string[] = [];
  if (previewsApiUrl(previews) === undefined) {
    problems.push(`${P}.apiURL: required for provider ${previews.provider} (it has no one public API)`);
  }
  if (previewsRepository(spec) === undefined) {
    problems.push(`${P}.repository: required, since spec.source.git.url has no owner/name path`);
  }
  problems.push(
    ...buildProblems(previews, production),
    ...patchSecretProblems(previews),
    ...exposureProblems(previews),
  );
  return problems;
}
