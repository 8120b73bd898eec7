// The kubeconfig's own bearer token, which `kubectl teal dashboard` trades for
// a login code: a static token, a token file, or what an exec plugin or an
// auth provider (OIDC) gives, all through client-node's authenticators, the
// very ones its requests use. A kubeconfig that authenticates another way (a
// client certificate, basic auth) has none: the dashboard, whose logins are
// TokenReviews, cannot take it, and the message says what to do instead.
import type { RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

/** The bearer token the kubeconfig's current user sends, running its exec plugin if it has one; undefined without. */
export async function kubeconfigBearerToken(kc: KubeConfig): Promise<string | undefined> {
  const options: RequestOptions = {};
  await kc.applyToHTTPSOptions(options);
  const header = (options.headers as Record<string, unknown> | undefined)?.Authorization;
  const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return match?.[1];
}

/** How the kubeconfig's user authenticates instead of a token, in words. */
export interface UserWithoutToken {
  user: string;
  context: string;
  cluster: string;
  clientCertificate: boolean;
}

/** Why the dashboard cannot log in with this user, and how to get a token. */
export function noTokenMessage(u: UserWithoutToken): string {
  const how = u.clientCertificate ? 'logs in with a client certificate' : 'has no bearer token';
  return [
    `the kubeconfig's user "${u.user}" (context "${u.context}") ${how}; the dashboard logs in with a bearer token only,`,
    'which it checks with a TokenReview (a certificate cannot be sent on to it). Use a kubeconfig with a token:',
    '  a ServiceAccount token:',
    `    kubectl config set-credentials teal-dashboard --token="$(kubectl create token NAME -n NAMESPACE)"`,
    `    kubectl config set-context teal-dashboard --cluster=${u.cluster} --user=teal-dashboard`,
    '    kubectl teal dashboard --context teal-dashboard',
    "  or an OIDC kubeconfig (an exec plugin such as kubelogin, or your cloud provider's), whose token works as is.",
  ].join('\n');
}

/** What noTokenMessage says of the kubeconfig's current user. */
export function userWithoutToken(kc: KubeConfig): UserWithoutToken {
  const user = kc.getCurrentUser();
  return {
    user: user?.name ?? '',
    context: kc.getCurrentContext(),
    cluster: kc.getCurrentCluster()?.name ?? 'CLUSTER',
    clientCertificate: Boolean(user?.certFile || user?.certData),
  };
}
