// Output helpers: kubectl-style tables and ages, -o json|yaml, and colour
// only when writing to a terminal (and NO_COLOR is unset).
import { stringify } from 'yaml';
import type { Format } from './flags.ts';

/** Columns separated by three spaces, as kubectl prints them. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => visibleLength(r[i] ?? ''))));
  return all
    .map((row) =>
      row
        .map((cell, i) => (i === row.length - 1 ? cell : pad(cell, widths[i] ?? 0)))
        .join('   ')
        .trimEnd(),
    )
    .join('\n');
}

const ANSI = /\x1b\[[0-9;]*m/g;
export const visibleLength = (text: string): number => [...text.replace(ANSI, '')].length;
export const pad = (text: string, width: number): string => text + ' '.repeat(Math.max(0, width - visibleLength(text)));

/** kubectl's HumanDuration: 45s, 3m20s, 2h, 4d5h, 2y. */
export function age(seconds: number | undefined): string {
  if (seconds === undefined) return '<unknown>';
  const s = Math.floor(seconds);
  const m = Math.floor(s / 60);
  const h = Math.floor(s / 3600);
  const d = Math.floor(h / 24);
  const y = Math.floor(d / 365);
  if (s < 120) return `${s}s`;
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (m < 180) return `${m}m`;
  if (h < 8) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (h < 48) return `${h}h`;
  if (h < 24 * 8) return h % 24 === 0 ? `${d}d` : `${d}d${h % 24}h`;
  if (d < 365 * 2) return `${d}d`;
  if (d < 365 * 8) return d % 365 === 0 ? `${y}y` : `${y}y${d % 365}d`;
  return `${y}y`;
}

export function formatData(data: unknown, format: Format): string {
  return format === 'json' ? `${JSON.stringify(data, null, 2)}\n` : stringify(data);
}

const COLOURS = { red: 31, green: 32, yellow: 33, blue: 34, grey: 90 } as const;
export type Colour = keyof typeof COLOURS;

export const useColour = (): boolean => process.stdout.isTTY === true && !process.env.NO_COLOR;

export function paint(text: string, colour: Colour | undefined, enabled: boolean): string {
  return enabled && colour ? `\x1b[${COLOURS[colour]}m${text}\x1b[0m` : text;
}

/** Symbols and colours of phases and pod states, as kubectl argo rollouts shows them. */
export function statusIcon(status: string): { icon: string; colour: Colour | undefined } {
  switch (status) {
    case 'Healthy':
    case 'Running':
    case 'Succeeded':
    case 'Completed':
    case 'Successful':
      return { icon: '✔', colour: 'green' };
    case 'Paused':
      return { icon: '॥', colour: 'grey' };
    case 'Degraded':
    case 'Failed':
    case 'Error':
    case 'CrashLoopBackOff':
    case 'ImagePullBackOff':
    case 'ErrImagePull':
      return { icon: '✖', colour: 'red' };
    case 'Inconclusive':
      return { icon: '?', colour: 'yellow' };
    case 'Cancelled':
      return { icon: '⊘', colour: 'grey' };
    case 'ScaledDown':
      return { icon: '•', colour: undefined };
    case 'Terminating':
      return { icon: '◌', colour: 'grey' };
    default:
      return { icon: '◌', colour: 'yellow' };
  }
}

export function showStatus(status: string, colour: boolean): string {
  const { icon, colour: c } = statusIcon(status);
  return paint(`${icon} ${status}`, c, colour);
}

/** The status of something that finishes (a run of checks, a measurement): Running is not yet a success. */
export function showProgress(status: string, colour: boolean): string {
  return status === 'Running' ? paint('◌ Running', 'yellow', colour) : showStatus(status, colour);
}
