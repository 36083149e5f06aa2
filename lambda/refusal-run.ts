/**
 * The evidence for an endpoint hold (docs/pacing.md, "The endpoint hold"): a run of refusals with a `Retry-After` of many
 * different messages, with few acceptances among them, not five in a row of one tenant's. lambda/pace.ts keeps the run, asks
 * it whether it is evidence enough, and begins the hold (lambda/endpoint-hold.ts) for the shortest `Retry-After` in it.
 */
import { isLongWait } from './endpoint-hold';

/** Different messages refused with a `Retry-After`, with few acceptances among them, that hold the pace. */
export const HOLD_AFTER_MESSAGES = 10;
/** At most this share of acceptances among them. */
export const HOLD_ACCEPTED_SHARE = 0.2;
/**
 * A quick hold begins on {@link HOLD_AFTER_MESSAGES}; a longer one only after refusals for {@link HOLD_EVIDENCE_MS}, or of
 * {@link HOLD_EVIDENCE_MESSAGES} different messages (about as many as a container sends in a second to a fast webhook; a fresh
 * one, still growing its requests in flight, sends far fewer in its first second).
 */
export const HOLD_EVIDENCE_MS = 2_000;
export const HOLD_EVIDENCE_MESSAGES = 200;
/** Message ids of recent refusals kept to tell different messages from the same one refused again. */
const RECENT_REFUSALS = 16;

/** A run of refusals with a `Retry-After`, begun at the first of them. */
export class RefusalRun {
  /** Different messages refused in it. */
  private messages = 0;
  /** Acceptances among them. */
  private accepted = 0;
  /** Of the messages, those received before (refused, or kept back by a hold, already). */
  private receivedBefore = 0;
  private shortest: number;

  constructor(
    private readonly startedAt: number,
    retryAfterSeconds: number,
  ) {
    this.shortest = retryAfterSeconds;
  }

  /** The shortest `Retry-After` in the run, seconds: how long a hold it begins lasts, at most. */
  get shortestRetryAfterSeconds(): number {
    return this.shortest;
  }

  /** True when at least half its messages were received before: a tenant's, come back together. */
  get mostlyBack(): boolean {
    return 2 * this.receivedBefore >= this.messages;
  }

  /**
   * One more refusal.
   * @param newMessage false when its message is among the latest refused ({@link RecentRefusals}): refused again, it is no
   * more evidence
   */
  refused(retryAfterSeconds: number, newMessage: boolean, receivedBefore: boolean): void {
    this.shortest = Math.min(this.shortest, retryAfterSeconds);
    if (!newMessage) return;
    this.messages += 1;
    if (receivedBefore) this.receivedBefore += 1;
  }

  /**
   * One acceptance.
   * @returns false once the acceptances are more than {@link HOLD_ACCEPTED_SHARE} of the messages: the run is over
   */
  countAcceptance(): boolean {
    this.accepted += 1;
    return this.accepted <= HOLD_ACCEPTED_SHARE * Math.max(HOLD_AFTER_MESSAGES, this.messages);
  }

  /** True when the run is evidence enough for a hold of its shortest `Retry-After` (see {@link HOLD_EVIDENCE_MS}). */
  enough(now: number): boolean {
    if (this.messages < HOLD_AFTER_MESSAGES) return false;
    return !isLongWait(this.shortest) || now - this.startedAt >= HOLD_EVIDENCE_MS || this.messages >= HOLD_EVIDENCE_MESSAGES;
  }
}

/** The message ids of the latest refusals, a ring of {@link RECENT_REFUSALS}. */
export class RecentRefusals {
  private readonly ids: string[] = [];
  private next = 0;

  /** True when `messageId` is among the latest refusals; remembers it either way. */
  seen(messageId: string): boolean {
    if (this.ids.includes(messageId)) return true;
    this.ids[this.next] = messageId;
    this.next = (this.next + 1) % RECENT_REFUSALS;
    return false;
  }
}
