// Regular expressions shared by the schema and the CRD. The API server runs
// them as RE2, so no lookarounds or backreferences.

/** DNS-1123 subdomain: Secret and other object names. */
export const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** A Secret or ConfigMap data key, as the API server checks it (with at most 253 characters). */
export const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/;
/** DNS-1035 label: Service names. */
export const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
/** DNS-1123 label: port and container names. */
export const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/**
 * A qualified name, as Kubernetes checks a pod condition type (readinessGates'
 * conditionType): an optional DNS-1123 subdomain prefix and "/", then a name
 * of at most 63 letters, digits, "-", "_" and "." that starts and ends
 * alphanumeric. The prefix's 253 characters are a rule of their own.
 */
export const QUALIFIED_NAME =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

const HOST = '[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*';
const USER = '[A-Za-z0-9_][A-Za-z0-9._-]*';
const PATH = '[^\\s-][^\\s]*';

/**
 * Git URLs Teal accepts: https (no credentials in the URL: those come from
 * secretRef), ssh://, scp-like user@host:path, and file:// which the operator
 * refuses unless started for local development.
 */
export const GIT_URL = new RegExp(
  [
    `https://${HOST}(:[0-9]{1,5})?/${PATH}`,
    `ssh://(${USER}@)?${HOST}(:[0-9]{1,5})?/${PATH}`,
    `${USER}@${HOST}:${PATH}`,
    'file:///[^\\s]*',
  ]
    .map((alt) => `(${alt})`)
    .join('|')
    .replace(/^/, '^(')
    .concat(')$'),
);

/** Characters git allows in a ref name (git check-ref-format). */
export const GIT_REF_CHARS = /^[^\x00-\x20\x7f~^:?*[\\]+$/;

export const COMMIT_SHA = /^[0-9a-f]{40}$/;

const DOMAIN = '[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(\\.[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*(:[0-9]+)?';
const PATH_COMPONENT = '[a-z0-9]+((\\.|_|__|-+)[a-z0-9]+)*';
const REPOSITORY = `(${DOMAIN}/)?${PATH_COMPONENT}(/${PATH_COMPONENT})*`;
const TAG = ':[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}';
const DIGEST = '@sha256:[a-f0-9]{64}';

/** An image repository without tag or digest: the build pushes <repository>:<commit>. */
export const IMAGE_REPOSITORY = new RegExp(`^${REPOSITORY}$`);
/** A ready image reference, with an optional tag and digest. */
export const IMAGE_REFERENCE = new RegExp(`^${REPOSITORY}(${TAG})?(${DIGEST})?$`);

// A web check's jsonPath: the part of Kubernetes JSONPath that analysis/jsonpath.ts walks.
const JSON_FIELD = String.raw`\.[A-Za-z0-9_-]+`;
const JSON_INDEX = String.raw`\[[0-9]+\]`;
const JSON_QUOTED = String.raw`\['[^'\]]*'\]|\["[^"\]]*"\]`;
const JSON_SEGMENT = `(${JSON_FIELD}|${JSON_INDEX}|${JSON_QUOTED})`;

/** `{$...}`, `{.a.b}` (the `$` is optional inside braces, as in kubectl) or `$...`. */
export const JSON_PATH_PATTERN = new RegExp(`^(\\{(\\$${JSON_SEGMENT}*|${JSON_SEGMENT}+)\\}|\\$${JSON_SEGMENT}*)$`);
