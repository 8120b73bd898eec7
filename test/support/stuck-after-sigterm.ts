// Loaded into an operator with --import by test/e2e/stop-watchdog.test.ts: on
// SIGTERM, once the operator's own listener has begun its stop, the main
// thread never yields to its event loop again, as the runaway operators of
// issue #24 did after logging "stopping: ...". TEAL_TEST_STUCK says how:
// "spin" only keeps the thread busy; "grow" also holds 1 MiB more outside the
// JS heap every 5 ms (about 200 MB/s, the rate those operators grew at).
const how = process.env.TEAL_TEST_STUCK;

process.on('SIGTERM', () => {
  // Listeners run in the order added: the operator's runs after this one, and
  // this immediate after both, and after the stop's first steps.
  setImmediate(() => {
    const held: Buffer[] = [];
    for (;;) {
      if (how === 'grow') held.push(Buffer.alloc(1024 * 1024, 1));
      const until = Date.now() + 5;
      while (Date.now() < until) {}
    }
  });
});
