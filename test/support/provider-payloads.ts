// Pull requests as the providers' REST docs shape them (fields trimmed to what
// matters and a little more, values our own), for the parse and contract tests.

export const SHA1 = '6dcb09b5b57875f334f61aebed695e2e4193db5e';
export const SHA2 = 'e5bd3914e2e596debea16f433f57875b5b90bcd6';

export const githubPull = (over: Record<string, unknown> = {}) => ({
  url: 'https://api.github.com/repos/acme/shop/pulls/1347',
  id: 1,
  node_id: 'MDExOlB1bGxSZXF1ZXN0MQ==',
  html_url: 'https://github.com/acme/shop/pull/1347',
  number: 1347,
  state: 'open',
  locked: false,
  title: 'Amazing new feature',
  user: { login: 'octocat', id: 1, type: 'User' },
  body: 'Please pull these awesome changes in!',
  labels: [{ id: 208045946, name: 'preview', color: 'f29513', default: true }],
  created_at: '2026-11-20T19:01:12Z',
  updated_at: '2026-11-21T20:01:12Z',
  draft: false,
  head: {
    label: 'octocat:new-topic',
    ref: 'new-topic',
    sha: SHA1,
    user: { login: 'octocat' },
    repo: { id: 1296269, full_name: 'octocat/shop' },
  },
  base: { label: 'acme:main', ref: 'main', sha: SHA2, repo: { id: 1296270, full_name: 'acme/shop' } },
  author_association: 'CONTRIBUTOR',
  ...over,
});

export const gitlabMr = (over: Record<string, unknown> = {}) => ({
  id: 155016530,
  iid: 133,
  project_id: 15513260,
  title: 'Manual job rules',
  description: 'Fixes the rules',
  state: 'opened',
  created_at: '2026-11-20T13:58:54.422Z',
  updated_at: '2026-11-21T14:00:08.695Z',
  target_branch: 'main',
  source_branch: 'manual-job-rules',
  author: { id: 4155490, username: 'marcel.amirault', name: 'Marcel Amirault', state: 'active' },
  source_project_id: 15513260,
  target_project_id: 15513260,
  labels: ['documentation', 'preview'],
  draft: false,
  work_in_progress: false,
  merge_status: 'can_be_merged',
  sha: SHA2,
  web_url: 'https://gitlab.com/group/sub/project/-/merge_requests/133',
  references: { short: '!133', full: 'group/sub/project!133' },
  ...over,
});

export const giteaPull = (over: Record<string, unknown> = {}) => ({
  id: 7,
  url: 'https://gitea.example.com/acme/shop/pulls/7',
  number: 7,
  user: { id: 2, login: 'alice', username: 'alice' },
  title: 'Add a cart',
  body: '',
  labels: [{ id: 1, name: 'preview', color: 'ee0701' }],
  state: 'open',
  draft: false,
  html_url: 'https://gitea.example.com/acme/shop/pulls/7',
  head: { label: 'cart', ref: 'cart', sha: SHA1, repo_id: 3, repo: { id: 3, full_name: 'alice/shop' } },
  base: { label: 'main', ref: 'main', sha: SHA2, repo_id: 1, repo: { id: 1, full_name: 'acme/shop' } },
  merge_base: SHA2,
  created_at: '2026-11-20T10:00:00Z',
  updated_at: '2026-11-21T10:00:00Z',
  ...over,
});

export const bitbucketPull = (over: Record<string, unknown> = {}) => ({
  type: 'pullrequest',
  id: 42,
  title: 'Checkout flow',
  state: 'OPEN',
  draft: false,
  author: { type: 'user', display_name: 'Alice Doe', nickname: 'alice', account_id: '557058:aaaa' },
  source: {
    branch: { name: 'feature/checkout' },
    commit: { type: 'commit', hash: SHA1.slice(0, 12) },
    repository: {
      type: 'repository',
      full_name: 'alice/shop',
      links: { html: { href: 'https://bitbucket.org/alice/shop' } },
    },
  },
  destination: {
    branch: { name: 'main' },
    commit: { type: 'commit', hash: SHA2.slice(0, 12) },
    repository: {
      type: 'repository',
      full_name: 'acme/shop',
      links: { html: { href: 'https://bitbucket.org/acme/shop' } },
    },
  },
  links: { html: { href: 'https://bitbucket.org/acme/shop/pull-requests/42' } },
  created_on: '2026-11-20T10:00:00.000000+00:00',
  updated_on: '2026-11-21T10:00:00.000000+00:00',
  ...over,
});
