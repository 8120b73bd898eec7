// What a build pod needs of the network it runs in, besides the App: private
// CAs to trust for git and for the registry (the App's spec.build.caSecretRef,
// the operator's --build-ca-configmap) and an HTTP(S) proxy (the operator's
// --build-http-proxy, --build-https-proxy, --build-no-proxy). Pure: the flags'
// rules, the checks of a CA's content, and what of a proxy URL is a secret.
import { X509Certificate } from 'node:crypto';
import { CONFIG_KEY, DNS1123_SUBDOMAIN } from '../app/patterns.ts';

/** The key a CA bundle is read from when none is named, as Flux's certSecretRef and cert-manager write it. */
export const DEFAULT_CA_KEY = 'ca.crt';

/** A key of a Secret or ConfigMap. */
export interface KeyRef {
  name: string;
  key: string;
}

/** The proxy every build container gets (HTTP_PROXY, HTTPS_PROXY, NO_PROXY and their lowercase forms). */
export interface BuildProxy {
  http?: string;
  https?: string;
  noProxy?: string;
}

/** The operator's network settings for every build. */
export interface BuildNetwork {
  /**
   * --build-ca-configmap NAME[/KEY]: a ConfigMap (as trust-manager distributes a bundle) read in the
   * namespace the build runs in: the App's, or the build namespace with --build-namespace.
   */
  caConfigMap?: KeyRef;
  proxy?: BuildProxy;
}

/** --build-ca-configmap NAME[/KEY], or why it is not one. */
export function parseConfigMapRef(value: string): KeyRef | string {
  const slash = value.indexOf('/');
  const name = slash < 0 ? value : value.slice(0, slash);
  const key = slash < 0 ? DEFAULT_CA_KEY : value.slice(slash + 1);
  if (name.length > 253 || !DNS1123_SUBDOMAIN.test(name)) {
    return 'must be NAME[/KEY] with NAME a ConfigMap name: lowercase letters, digits, "-" and "."';
  }
  if (key.length > 253 || !CONFIG_KEY.test(key)) {
    return 'must be NAME[/KEY] with KEY a ConfigMap key: letters, digits, "-", "_" and "."';
  }
  return { name, key };
}

/**
 * Why a proxy flag's value is not a proxy URL (http:// or https://, a host, no path), or undefined.
 * The message never quotes the value: it may carry a password.
 */
export function proxyUrlProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be a URL such as http://proxy.example.com:3128';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an http:// or https:// URL';
  if (url.hostname === '') return 'must name the proxy host';
  if ((url.pathname !== '/' && url.pathname !== '') || url.search !== '' || url.hash !== '') {
    return 'must be scheme://[user:password@]host[:port], without a path, query or fragment';
  }
  return undefined;
}

/** Why a --build-no-proxy value is not a comma-separated list of hosts, domains, addresses or CIDRs, or undefined. */
export function noProxyProblem(value: string): string | undefined {
  return /^[A-Za-z0-9.*:/[\]_-]+(,[A-Za-z0-9.*:/[\]_-]+)*$/.test(value.replaceAll(' ', ''))
    ? undefined
    : 'must be a comma-separated list of hosts, .domains, IP addresses or CIDRs';
}

/** The proxy variables, upper and lower case (curl reads only the lowercase http_proxy; Go reads either). */
export function proxyEnv(proxy: BuildProxy | undefined): { name: string; value: string }[] {
  const pairs: [string, string | undefined][] = [
    ['HTTP_PROXY', proxy?.http],
    ['HTTPS_PROXY', proxy?.https],
    ['NO_PROXY', proxy?.noProxy],
  ];
  return pairs.flatMap(([name, value]) =>
    value === undefined || value === ''
      ? []
      : [
          { name, value },
          { name: name.toLowerCase(), value },
        ],
  );
}

/**
 * The credentials in proxy URLs, for a masker: each password, and user:password
 * (whose base64 is what a Proxy-Authorization header carries).
 */
export function proxyCredentials(urls: readonly (string | undefined)[]): string[] {
  const values: string[] = [];
  for (const text of urls) {
    if (!text) continue;
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      continue;
    }
    const user = decode(url.username);
    const password = decode(url.password);
    if (password !== '') values.push(password, `${user}:${password}`);
    else if (user !== '') values.push(user);
  }
  return [...new Set(values)];
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/**
 * Why a CA bundle is not one or more PEM certificates, or undefined. The
 * message names no part of the content.
 */
export function caBundleProblem(text: string): string | undefined {
  const blocks = text.match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) return 'holds no PEM certificate (-----BEGIN CERTIFICATE-----)';
  for (const [index, block] of blocks.entries()) {
    try {
      new X509Certificate(block);
    } catch {
      return `certificate ${index + 1} of ${blocks.length} is not a valid X.509 certificate`;
    }
  }
  return undefined;
}

/** Where a build's CA bundle comes from, as the reconciler read it (the text at the key, decoded). */
export interface CaSource {
  /** The field or flag that names it, for the message: spec.build.caSecretRef or --build-ca-configmap. */
  field: string;
  kind: 'Secret' | 'ConfigMap';
  namespace: string;
  ref: KeyRef;
  /** The object's data, decoded; undefined when there is no such object. */
  data: Record<string, string> | undefined;
}

/** Why this CA source cannot be trusted by a build, naming its field and never its content; undefined when it can. */
export function caSourceProblem(source: CaSource): string | undefined {
  const { field, kind, namespace, ref, data } = source;
  const object = `${kind} ${namespace}/${ref.name}`;
  if (data === undefined) return `${field}: ${object} not found`;
  const text = data[ref.key];
  if (text === undefined) return `${field}: ${object} has no key "${ref.key}"`;
  const problem = caBundleProblem(text);
  return problem ? `${field}: ${object} key "${ref.key}" ${problem}` : undefined;
}
