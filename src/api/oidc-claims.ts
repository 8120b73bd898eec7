// An OIDC id token's claims mapped to a Kubernetes user exactly as
// kube-apiserver's JWT authenticator maps them for the same settings
// (AuthenticationConfiguration jwt[].claimMappings, claim and prefix form;
// k8s.io/apiserver plugin/pkg/authenticator/token/oidc), so the dashboard's
// SubjectAccessReviews ask for the user kubectl --token <id token> is:
// - username: the claim must be present and a string; with claim "email", an
//   email_verified claim, when present, must be true; the prefix is prepended.
// - groups: when the claim is present, a string or a list of strings, each
//   prefixed; absent, no groups.
// - system:authenticated is added, as the API server adds it to every
//   authenticated user.
// CEL expressions, claimValidationRules and userValidationRules are not
// mirrored: docs/dashboard.md says to configure the API server without them
// (or with rules the provider's tokens always pass).
import type { UserInfo } from './auth.ts';

/** The claim and prefix settings: --oidc-username-claim/-prefix, --oidc-groups-claim/-prefix. */
export interface OidcClaimMapping {
  usernameClaim: string;
  usernamePrefix: string;
  /** No groups claim: the user has no groups but system:authenticated. */
  groupsClaim?: string | undefined;
  groupsPrefix: string;
}

/** The group the API server gives every authenticated user. */
export const AUTHENTICATED_GROUP = 'system:authenticated';

/** Why an id token's claims give no user: the login's 401 says it. */
export class ClaimsRejected extends Error {}

/** The user of these verified claims; throws ClaimsRejected, naming the claim, when they give none. */
export function userOfClaims(claims: Readonly<Record<string, unknown>>, mapping: OidcClaimMapping): UserInfo {
  return { username: usernameOf(claims, mapping), groups: [...groupsOf(claims, mapping), AUTHENTICATED_GROUP] };
}

function usernameOf(claims: Readonly<Record<string, unknown>>, { usernameClaim, usernamePrefix }: OidcClaimMapping) {
  const value = claims[usernameClaim];
  if (value === undefined)
    throw new ClaimsRejected(`the id token has no "${usernameClaim}" claim (the username claim)`);
  if (typeof value !== 'string') {
    throw new ClaimsRejected(`the id token's "${usernameClaim}" claim (the username claim) is not a string`);
  }
  if (usernameClaim === 'email' && 'email_verified' in claims && claims.email_verified !== true) {
    throw new ClaimsRejected('the id token\'s email is not verified (its "email_verified" claim is not true)');
  }
  const username = usernamePrefix + value;
  // The API server would name this user ""; RBAC can bind no one by that name, and a session needs a name.
  if (username === '')
    throw new ClaimsRejected(`the id token's "${usernameClaim}" claim (the username claim) is empty`);
  return username;
}

function groupsOf(claims: Readonly<Record<string, unknown>>, { groupsClaim, groupsPrefix }: OidcClaimMapping) {
  if (groupsClaim === undefined || groupsClaim === '') return [];
  const value = claims[groupsClaim];
  if (value === undefined) return [];
  const groups = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(groups) || !groups.every((g): g is string => typeof g === 'string')) {
    throw new ClaimsRejected(
      `the id token's "${groupsClaim}" claim (the groups claim) is neither a string nor a list of strings`,
    );
  }
  return groups.map((g) => groupsPrefix + g);
}
