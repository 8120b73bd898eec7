// What Linux says about a process and the machine, from /proc.
import { readFileSync } from 'node:fs';

/** The 1-minute load average. */
export function loadAverage(): number {
  return Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
}

export interface Memory {
  /** Resident now (VmRSS), bytes. */
  rss: number;
  /** The highest resident size since the process started (VmHWM), bytes. */
  peak: number;
}

export function memory(pid: number): Memory {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { rss: kib('VmRSS') * 1024, peak: kib('VmHWM') * 1024 };
}

/** Clock ticks per second of /proc/<pid>/stat: 100 on every Linux this runs on (USER_HZ). */
const TICKS = 100;

/** CPU seconds (user and system) the process has used so far. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name, in parentheses, may hold spaces: the fields start after its closing one.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS;
}

/**
 * CPU seconds (user and system) used by this process's children that have
 * ended and been waited for, their own waited-for children included: read
 * before and after a command, the CPU its whole process tree used, which
 * the machine's load changes much less than the time it takes.
 */
export function childrenCpuSeconds(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) / TICKS;
}
