/**
 * `replay --rate`: messages per second, on average, from the first send on; a batch waits for
 * its turn, so at most one batch goes out ahead of the pace.
 */
export class Pace {
  /** When the next message may go, ms. */
  private next = 0;

  /** @param perSecond messages per second, more than 0 */
  constructor(private readonly perSecond: number) {}

  /**
   * Waits until `messages` may go, and books them.
   * @returns false when `signal` aborted the wait (nothing is booked)
   */
  async take(messages: number, signal?: AbortSignal): Promise<boolean> {
    const now = Date.now();
    const at = Math.max(now, this.next);
    this.next = at + (messages * 1000) / this.perSecond;
    if (at > now) {
      const waited = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => {
          signal?.removeEventListener('abort', onAbort);
          resolve(true);
        }, at - now);
        const onAbort = (): void => {
          clearTimeout(timer);
          resolve(false);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
      });
      if (!waited) {
        this.next -= (messages * 1000) / this.perSecond;
        return false;
      }
    }
    return signal?.aborted !== true;
  }
}
