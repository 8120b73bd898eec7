// successCondition and failureCondition of web and prometheus checks: CEL over
// `result`, the measured value, with Argo Rollouts' rules for which one wins.
//
// The language is CEL (Common Expression Language), through @marcbachmann/cel-js.
// CEL because it is the expression language Kubernetes users already write
// (ValidatingAdmissionPolicy, CRD x-kubernetes-validations), and it is built to
// be evaluated from untrusted authors: no loops, no assignment, no I/O. This
// implementation because it is maintained (8.x, 2026), has no dependencies, ships
// ESM with TypeScript types, interprets its own AST (no eval or Function), and
// reads only own properties of plain objects (`result.constructor` is "no such
// key"). Rejected: expr-eval (CVE-2025-12735, code execution; its maintainer
// unreachable), filtrex (compiles to `new Function`), jexl (an open sandbox bypass
// through bracket access to constructor; async API), jsonata (lambdas and
// recursion, so unbounded time; a prototype pollution CVE in 2026; async API),
// cel-js by ChromeGG (chevrotain and ramda as dependencies, slower), @bufbuild/cel
// (sound, but 0.x and ~11 MB with its protobuf peer and spec data).
//
// The App author is untrusted: a condition must not stop or crash the operator.
// The library bounds parsing (length, AST nodes, nesting); this module adds what
// it does not:
// - time: evaluation runs under node:vm's timeout, used only as a watchdog (the
//   library, not vm, is the sandbox); nested macros over a large result end there,
//   and the measurement is Failed (see judge). The operator never runs this on its
//   main thread: condition-pool.ts runs it in a worker, killed at a deadline of its
//   own, with a time budget per App;
// - memory: no way to grow a value beyond the sum of what the expression names.
//   Ropes make `s + s` free until a string is read, then it is materialized at
//   once, beyond any timeout or a worker's heap limit (measured: a 1 MB result
//   doubled nine times aborts the process). So a `+` may use an iteration
//   variable once, cel.bind and map() (which keep what they build) are refused,
//   and so are split() (a long string into an array: a V8 fatal error) and
//   matches() (JavaScript regular expressions backtrack; CEL means RE2);
// - the result: at most MAX_RESULT_VALUES values, MAX_RESULT_TEXT characters and
//   MAX_RESULT_DEPTH levels, checked before it reaches the evaluator.
import vm from 'node:vm';
import { type ASTNode, Environment, type ParseResult } from '@marcbachmann/cel-js';

/** Same bound as the schema's; a condition is a line, not a program. */
export const MAX_EXPRESSION_LENGTH = 1024;
export const MAX_RESULT_VALUES = 10_000;
/** Characters in the result's strings and keys. */
export const MAX_RESULT_TEXT = 64 * 1024;
export const MAX_RESULT_DEPTH = 32;
/** Far above any honest condition (microseconds); short enough not to stall the operator. */
export const EVALUATION_TIMEOUT_MS = 250;
const SHOWN_VALUE = 128;
const SHOWN_CONDITION = 200;

const environment = new Environment({
  enableOptionalTypes: true,
  limits: { maxAstNodes: 128, maxDepth: 32, maxListElements: 32, maxMapEntries: 32, maxCallArguments: 4 },
})
  .registerVariable('result', 'dyn')
  .registerFunction('isNaN(double): bool', (x: number) => Number.isNaN(x))
  .registerFunction(
    'isInf(double): bool',
    (x: number) => x === Number.POSITIVE_INFINITY || x === Number.NEGATIVE_INFINITY,
  );

/**
 * What a condition may call: CEL's own functions and macros, less those that can
 * grow a value or run away (see the top of this file), plus isNaN and isInf.
 */
export const CONDITION_FUNCTIONS: readonly string[] = [
  'size',
  'has',
  'int',
  'uint',
  'double',
  'string',
  'bool',
  'dyn',
  'type',
  'all',
  'exists',
  'exists_one',
  'filter',
  'contains',
  'startsWith',
  'endsWith',
  'lowerAscii',
  'upperAscii',
  'trim',
  'indexOf',
  'lastIndexOf',
  'substring',
  'orValue',
  'or',
  'hasValue',
  'value',
  'isNaN',
  'isInf',
];
const ALLOWED = new Set(CONDITION_FUNCTIONS);
const COMPREHENSIONS = new Set(['all', 'exists', 'exists_one', 'filter', 'map']);
const REFUSED: Record<string, string> = {
  matches: 'JavaScript regular expressions can take exponential time',
  map: 'test the elements with all(), exists() or filter() instead',
  split: 'it can turn a long string into an array too large to hold',
  bind: 'it can double a value at every level',
};

type Compiled = { ok: true; run: (context: { result: unknown }) => unknown } | { ok: false; problem: string };

/** Expressions checkCondition remembers: the same few conditions are checked at every reconcile. */
const CHECKED_LIMIT = 1024;
const checked = new Map<string, string | undefined>();

/**
 * A condition's problem at validation time, so an App with a bad condition is
 * refused before anything runs; undefined when it is fine. Remembered, as it
 * runs on the main thread at every reconcile of every App: parsing 20 checks'
 * conditions anew each time was a visible part of a reconcile.
 */
export function checkCondition(expression: string): string | undefined {
  if (checked.has(expression)) return checked.get(expression);
  const compiled = compile(expression);
  const problem = compiled.ok ? undefined : compiled.problem;
  // The oldest goes first: a Map iterates in insertion order.
  if (checked.size >= CHECKED_LIMIT) checked.delete(checked.keys().next().value ?? '');
  checked.set(expression, problem);
  return problem;
}

function compile(expression: string): Compiled {
  if (expression.length > MAX_EXPRESSION_LENGTH) {
    return { ok: false, problem: `is longer than ${MAX_EXPRESSION_LENGTH} characters` };
  }
  let parsed: ParseResult;
  try {
    parsed = environment.parse(expression);
  } catch (error) {
    return { ok: false, problem: `is not valid CEL: ${firstLine(error)}` };
  }
  const checked = parsed.check();
  if (!checked.valid) return { ok: false, problem: `is not valid CEL: ${firstLine(checked.error)}` };
  if (checked.type !== 'bool' && checked.type !== 'dyn') {
    return { ok: false, problem: `gives ${checked.type}, not true or false` };
  }
  const refused = refusedCall(parsed.ast) ?? selfAddition(parsed.ast, new Set());
  return refused ? { ok: false, problem: refused } : { ok: true, run: parsed };
}

/** The first function the expression calls that conditions do not offer. */
function refusedCall(node: ASTNode): string | undefined {
  if (node.op === 'call' || node.op === 'rcall') {
    const name = node.args[0];
    if (!ALLOWED.has(name)) {
      const why = REFUSED[name] ?? `they can call ${CONDITION_FUNCTIONS.join(', ')}`;
      return `calls ${name}(), which conditions do not offer: ${why}`;
    }
  }
  for (const child of children(node)) {
    const refused = refusedCall(child);
    if (refused) return refused;
  }
  return undefined;
}

/**
 * A `+` that uses one iteration variable twice (`x + x`): the only way left to
 * double a value, and doubling inside nested macros is exponential.
 */
function selfAddition(node: ASTNode, scope: ReadonlySet<string>): string | undefined {
  if (node.op === '+') {
    const uses = new Map<string, number>();
    countUses(node, scope, uses);
    for (const [name, count] of uses) {
      if (count > 1) return `uses "${name}" twice in one "+": a value may not be added to itself`;
    }
  }
  const bound = binding(node);
  for (const child of children(node)) {
    const inner = bound && child !== bound.receiver ? new Set([...scope, bound.name]) : scope;
    const found = selfAddition(child, inner);
    if (found) return found;
  }
  return undefined;
}

function countUses(node: ASTNode, scope: ReadonlySet<string>, uses: Map<string, number>): void {
  if (node.op === 'id' && scope.has(node.args)) uses.set(node.args, (uses.get(node.args) ?? 0) + 1);
  const bound = binding(node);
  const inner = bound ? new Set([...scope].filter((name) => name !== bound.name)) : scope;
  for (const child of children(node)) countUses(child, child === bound?.receiver ? scope : inner, uses);
}

/** The variable a macro such as `list.all(x, …)` binds, for everything but its receiver. */
function binding(node: ASTNode): { name: string; receiver: ASTNode } | undefined {
  if (node.op !== 'rcall' || !COMPREHENSIONS.has(node.args[0])) return undefined;
  const first = node.args[2][0];
  return first?.op === 'id' ? { name: first.args, receiver: node.args[1] } : undefined;
}

function children(node: ASTNode): ASTNode[] {
  const args: unknown = node.args;
  if (!Array.isArray(args)) return [];
  return args.flatMap((arg: unknown) => (Array.isArray(arg) ? arg.filter(isNode) : isNode(arg) ? [arg] : []));
}

function isNode(value: unknown): value is ASTNode {
  return typeof value === 'object' && value !== null && 'op' in value && 'args' in value;
}

/**
 * outOfTime: the evaluation was stopped at EVALUATION_TIMEOUT_MS, which judge
 * reads as Failed rather than Error.
 */
export type ConditionOutcome = { ok: true; value: boolean } | { ok: false; error: string; outOfTime?: true };

/**
 * Evaluates a condition with `result` bound to the measured value (an absent
 * value is null). Anything but true or false is an error; it never throws.
 */
export function evaluateCondition(expression: string, result: unknown): ConditionOutcome {
  const compiled = compile(expression);
  if (!compiled.ok) return { ok: false, error: `the condition ${compiled.problem}` };
  const tooLarge = resultProblem(result);
  if (tooLarge) return { ok: false, error: tooLarge };
  let value: unknown;
  try {
    value = withDeadline(() => compiled.run({ result: result ?? null }));
  } catch (error) {
    if (isTimeout(error)) return { ok: false, error: OUT_OF_TIME, outOfTime: true };
    return { ok: false, error: evaluationError(error) };
  }
  if (typeof value === 'boolean') return { ok: true, value };
  const gave = value === null ? 'null' : `${typeName(value)} ${show(value)}`;
  return { ok: false, error: `the condition gave ${gave}, not true or false` };
}

// One context and one script for every evaluation: vm only keeps time here.
let job: (() => unknown) | undefined;
const watchdog = vm.createContext({ run: () => job?.() });
const callJob = new vm.Script('run()');

function withDeadline(fn: () => unknown): unknown {
  job = fn;
  try {
    return callJob.runInContext(watchdog, { timeout: EVALUATION_TIMEOUT_MS });
  } finally {
    job = undefined;
  }
}

const OUT_OF_TIME = `the condition took longer than ${EVALUATION_TIMEOUT_MS} ms`;

// The timeout's error comes from the vm context's realm: not an `instanceof Error` here.
function isTimeout(error: unknown): boolean {
  return (
    typeof error === 'object' && error !== null && 'code' in error && error.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT'
  );
}

function evaluationError(error: unknown): string {
  if (error instanceof RangeError) return `the condition ran out of room: ${firstLine(error)}`;
  return firstLine(error);
}

/**
 * Why a result is too large or not JSON for a condition; undefined when it is
 * fine. It runs on the main thread for every answer, so it walks without
 * allocating per value: values and their depths on two stacks.
 */
export function resultProblem(result: unknown): string | undefined {
  const pending: unknown[] = [result];
  const depths: number[] = [0];
  let values = 0;
  let text = 0;
  while (pending.length > 0) {
    const value = pending.pop();
    const depth = depths.pop() ?? 0;
    values++;
    if (depth > MAX_RESULT_DEPTH) return `the result nests deeper than ${MAX_RESULT_DEPTH} levels`;
    if (typeof value === 'string') text += value.length;
    else if (isScalar(value) || (value === undefined && depth === 0)) continue;
    else if (Array.isArray(value) || isPlainObject(value)) {
      const keys = Array.isArray(value) ? undefined : Object.keys(value);
      const count = keys ? keys.length : (value as unknown[]).length;
      if (values + pending.length + count > MAX_RESULT_VALUES)
        return `the result has more than ${MAX_RESULT_VALUES} values`;
      if (keys) {
        for (const key of keys) {
          text += key.length;
          pending.push((value as Record<string, unknown>)[key]);
          depths.push(depth + 1);
        }
      } else {
        for (const item of value as unknown[]) {
          pending.push(item);
          depths.push(depth + 1);
        }
      }
    } else return `the result holds ${typeName(value)}, which is not JSON`;
    if (text > MAX_RESULT_TEXT) return `the result has more than ${MAX_RESULT_TEXT} characters of text`;
  }
  return undefined;
}

function isScalar(value: unknown): boolean {
  return value === null || typeof value === 'number' || typeof value === 'boolean';
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

export type ConditionPhase = 'Successful' | 'Failed' | 'Inconclusive' | 'Error';
export interface Judgement {
  phase: ConditionPhase;
  /** Why: the condition that decided and the value, both bounded. */
  message: string;
}

/**
 * Argo Rollouts' rules. An absent or empty condition is not set. Neither set:
 * Successful. Only success: Failed unless it holds. Only failure: Successful
 * unless it holds. Both: failure wins; Inconclusive when neither holds. A
 * condition that cannot be evaluated makes an Error, success checked first.
 *
 * Teal's addition (Argo has no time limit): a condition stopped at its deadline
 * makes the measurement Failed, not Error. Its time depends on the condition and
 * the size of the answer, both the App's, so a retry 10 s later would spend the
 * same time to learn the same; Failed counts against failureLimit and is measured
 * again only at the check's interval, at most count times.
 */
export function judge(result: unknown, success?: string, failure?: string): Judgement {
  const s = success ? evaluateCondition(success, result) : undefined;
  if (s && !s.ok) return errorJudgement('successCondition', success ?? '', s, result);
  const f = failure ? evaluateCondition(failure, result) : undefined;
  if (f && !f.ok) return errorJudgement('failureCondition', failure ?? '', f, result);
  if (!s && !f) return { phase: 'Successful', message: `no condition is set: every result passes (${show(result)})` };
  const phase = decide(s?.value, f?.value);
  return { phase, message: `${reason(phase, success, failure)} for result ${show(result)}` };
}

function decide(success: boolean | undefined, failure: boolean | undefined): Exclude<ConditionPhase, 'Error'> {
  const failed = failure ?? !success;
  const passed = success ?? !failure;
  if (failed) return 'Failed';
  return passed ? 'Successful' : 'Inconclusive';
}

/** The condition that decided, as Argo's rules read for this phase. */
function reason(phase: Exclude<ConditionPhase, 'Error'>, success?: string, failure?: string): string {
  const s = `successCondition ${quote(success ?? '')}`;
  const f = `failureCondition ${quote(failure ?? '')}`;
  switch (phase) {
    case 'Failed':
      return failure ? `${f} is true` : `${s} is false`;
    case 'Successful':
      return success ? `${s} is true` : `${f} is false`;
    case 'Inconclusive':
      return `neither ${s} nor ${f} is true`;
  }
}

function errorJudgement(
  which: string,
  expression: string,
  { error, outOfTime }: { error: string; outOfTime?: true },
  result: unknown,
): Judgement {
  if (outOfTime)
    return outOfTimeJudgement(`${which} ${quote(expression)} took longer than ${EVALUATION_TIMEOUT_MS} ms`, result);
  const empty = result === undefined || result === null || (Array.isArray(result) && result.length === 0);
  const why = empty ? `the result is empty, the provider returned no data (${error})` : error;
  return {
    phase: 'Error',
    message: `could not evaluate ${which} ${quote(expression)}: ${why}; result ${show(result)}`,
  };
}

/**
 * A measurement whose conditions ran out of time (their deadline, or the App's
 * time budget): Failed, not retried as an Error would be (see judge).
 */
export function outOfTimeJudgement(why: string, result: unknown): Judgement {
  return { phase: 'Failed', message: `${why}, so the measurement is Failed; result ${show(result)}` };
}

function quote(expression: string): string {
  return JSON.stringify(cut(expression, SHOWN_CONDITION));
}

/** The value as a message shows it: JSON with NaN and ±Infinity spelled out, cut to SHOWN_VALUE. */
export function show(value: unknown): string {
  const out = { text: '' };
  render(value, 0, out);
  return cut(out.text, SHOWN_VALUE);
}

// Stops once past SHOWN_VALUE, so a huge or deep result costs no more than that.
function render(item: unknown, depth: number, out: { text: string }): void {
  if (out.text.length > SHOWN_VALUE) return;
  if (typeof item === 'string') {
    out.text += JSON.stringify(item.slice(0, SHOWN_VALUE));
  } else if (typeof item === 'function') {
    out.text += 'function';
  } else if (typeof item !== 'object' || item === null) {
    out.text += String(item ?? null);
  } else if (depth > 8) {
    out.text += '…';
  } else {
    renderMembers(item, depth, out);
  }
}

function renderMembers(item: object, depth: number, out: { text: string }): void {
  const array = Array.isArray(item);
  out.text += array ? '[' : '{';
  let first = true;
  for (const [key, member] of array ? item.entries() : ownEntries(item)) {
    if (out.text.length > SHOWN_VALUE) break;
    if (!first) out.text += ',';
    first = false;
    if (!array) out.text += `${JSON.stringify(key)}:`;
    render(member, depth + 1, out);
  }
  out.text += array ? ']' : '}';
}

function* ownEntries(item: object): Generator<[string, unknown]> {
  for (const key in item) {
    if (Object.hasOwn(item, key)) yield [key, (item as Record<string, unknown>)[key]];
  }
}

function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

function typeName(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return 'a list';
  if (isPlainObject(value)) return 'a map';
  const names: Record<string, string> = {
    bigint: 'an int',
    number: 'a double',
    boolean: 'a bool',
    object: 'an object',
  };
  return names[typeof value] ?? `a ${typeof value}`;
}

function firstLine(error: unknown): string {
  const message = typeof error === 'object' && error !== null && 'message' in error ? error.message : undefined;
  const text = typeof message === 'string' ? message : String(error);
  return text.split('\n', 1)[0] ?? text;
}
