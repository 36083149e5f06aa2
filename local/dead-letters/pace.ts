/**
 * `replay --rate`: N messages a second from the first message's turn. Message m goes no sooner
 * than m/N seconds after it, so in the first t seconds at most N·t + 1 go; a batch goes at the
 * turn of its last message, never ahead of the pace.
 */
export class Pace {
  /** The turn of the next message, ms; undefined before the first. */
  private next: number | undefined;

  /** @param perSecond messages per second, more than 0 */
  constructor(private readonly perSecond: number) {}

  /**
   * Waits until all of `messages` may go, and books them.
   * @returns false when `signal` aborted the wait (nothing is booked)
   */
  async take(messages: number, signal?: AbortSignal): Promise<boolean> {
    if (signal?.aborted === true) return false;
    const spacing = 1000 / this.perSecond;
    const now = Date.now();
    // A pace that fell behind (slow SQS calls) goes on from now, rather than catch up in a burst.
    const first = Math.max(now, this.next ?? now);
    const at = first + (messages - 1) * spacing;
    this.next = at + spacing;
    const waited =
      at <= now ||
      (await new Promise<boolean>((resolve) => {
        const timer = setTimeout(
          () => {
            signal?.removeEventListener('abort', onAbort);
            resolve(true);
          },
          Math.ceil(at - now),
        );
        const onAbort = (): void => {
          clearTimeout(timer);
          resolve(false);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
      }));
    if (!waited) this.next -= messages * spacing;
    return waited;
  }
}
