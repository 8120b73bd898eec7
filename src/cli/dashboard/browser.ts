// Opening the dashboard in the user's browser: $BROWSER when set (its first
// entry; "%s" stands for the URL, else the URL comes last), else the
// platform's opener. The command gets the URL as an argument, never through a
// shell.

/** The program and arguments that open url. */
export function browserCommand(url: string, env: NodeJS.ProcessEnv, platform: NodeJS.Platform): [string, string[]] {
  const chosen = env.BROWSER?.split(':').find((entry) => entry.trim() !== '');
  if (chosen !== undefined) {
    const words = chosen.trim().split(/\s+/);
    const args = words.slice(1);
    const withUrl = args.some((w) => w.includes('%s')) ? args.map((w) => w.replaceAll('%s', url)) : [...args, url];
    return [words[0] ?? chosen, withUrl];
  }
  if (platform === 'darwin') return ['open', [url]];
  if (platform === 'win32') return ['rundll32', ['url.dll,FileProtocolHandler', url]];
  return ['xdg-open', [url]];
}
