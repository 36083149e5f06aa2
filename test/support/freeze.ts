/** Holds this process's event loop as SIGSTOP or a suspended machine would: no timer fires meanwhile, and every one fires late. */
export function freeze(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy: nothing else runs
  }
}
