/**
 * Why a message is in the dead-letter queue, in the words every part of the project uses: the
 * relay's reason attribute (`dead-letter.ts`), the `cause` dimension of its `DeadLettered` metric
 * (`dead-letter-metrics.ts`), the stack's dashboard and Logs Insights queries, and
 * `sqs-webhook-relay dead-letters`. No imports: the construct's declarations reach it, and must
 * not reach the function's runtime types.
 */

/** The causes, each as the reason attribute and the metric's dimension write it. */
export const DEAD_LETTER_CAUSES = {
  /** The webhook answered a permanent failure (a 3xx or 4xx other than 408/429): copied by the relay at once. */
  refused: 'refused permanently',
  /** Still failing when its retry window ran out: copied by the relay. */
  windowExhausted: 'retry window exhausted',
  /**
   * Moved by SQS itself at the redrive policy's `maxReceiveCount`: no reason attribute. With the
   * retry window on, only invocations that crash or time out reach it; with SQS's count semantics,
   * every message that fails that many receives.
   */
  backstop: 'moved by SQS at the backstop',
} as const;

/** One of {@link DEAD_LETTER_CAUSES}. */
export type DeadLetterCauseName = (typeof DEAD_LETTER_CAUSES)[keyof typeof DEAD_LETTER_CAUSES];

/** Every cause, in the order the dashboard and the summary list them. */
export const DEAD_LETTER_CAUSE_LIST: readonly DeadLetterCauseName[] = Object.values(DEAD_LETTER_CAUSES);

/** The dimension of `DeadLettered` that says why (beside `service`). */
export const CAUSE_DIMENSION = 'cause';
