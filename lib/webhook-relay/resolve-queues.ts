/**
 * The queues' part of resolving the props: the queues to create or the ones passed in, the
 * redrive policy's receive count (derived from `outageTolerance` when asked), the visibility
 * timeout and the retention checked against the retry window a message can take.
 */
import { Duration, Token } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { MAX_VISIBILITY_SECONDS, VISIBILITY_TIMEOUT_FACTOR, visibilityTimeoutSecondsFor } from '../../lambda/aws-limits';
import { type BreakerSettings, receivesToSurvive } from '../../lambda/breaker';
import { backoffDelay } from '../../lambda/retry-timing';
import { BACKOFF_POLICIES, SETTINGS } from '../../lambda/settings';
import { deadLetterQueueName, FIFO_SUFFIX } from '../../lambda/sqs-util';
import { check, seconds, wholeNumber } from './checks';
import { DLQ_RETENTION, RELAY_DEFAULTS } from './defaults';
import type { WebhookRelayProps } from './props';
import type { ResolvedWarning } from './resolve';

const SQS_MAX_VISIBILITY = Duration.seconds(MAX_VISIBILITY_SECONDS);

/** Queues the construct creates. */
export interface QueuesToCreate {
  readonly kind: 'create';
  readonly fifo: boolean;
  /** Names, when `queueName` is given: `<base>[.fifo]` and `<base>-dlq[.fifo]`. */
  readonly names: { readonly queue: string; readonly dlq: string } | undefined;
  readonly retention: Duration;
  readonly visibilitySeconds: number;
}

/** Queues passed in. */
export interface ExistingQueues {
  readonly kind: 'existing';
  readonly queue: sqs.IQueue;
  readonly deadLetterQueue: sqs.IQueue;
}

/** The queues to create, or the ones passed in, with the redrive policy's receive count. */
export function resolveQueues(
  props: WebhookRelayProps,
  timeoutSeconds: number,
  windowSeconds: number,
  breaker: BreakerSettings,
  warnings: ResolvedWarning[],
): { queues: QueuesToCreate | ExistingQueues; maxReceiveCount: number } {
  const d = RELAY_DEFAULTS;
  const minimumVisibility = visibilityTimeoutSecondsFor(timeoutSeconds, windowSeconds);
  const survivingOutage = receivesForOutage(props, breaker);

  if (props.queue !== undefined) {
    const existing = resolveExistingQueues(props, props.queue, timeoutSeconds, minimumVisibility, warnings);
    if (survivingOutage !== undefined) {
      check(
        existing.maxReceiveCount >= survivingOutage,
        'outageTolerance',
        `needs a maxReceiveCount of at least ${survivingOutage}; the existing queue's redrive policy has ${existing.maxReceiveCount}`,
      );
    }
    return existing;
  }
  check(
    props.deadLetterQueue === undefined,
    'deadLetterQueue',
    'is only for an existing queue (pass queue too); the construct creates its own DLQ otherwise',
  );
  if (survivingOutage !== undefined && props.maxReceiveCount !== undefined) {
    check(
      props.maxReceiveCount >= survivingOutage,
      'maxReceiveCount',
      `(${props.maxReceiveCount}) is too small for outageTolerance: surviving ${props.outageTolerance?.toHumanString()} of outage takes ${survivingOutage} receives; leave maxReceiveCount unset to derive it`,
    );
  }
  const { min, max } = SETTINGS.MAX_RECEIVE_COUNT;
  const maxReceiveCount = wholeNumber(
    props.maxReceiveCount ?? Math.max(d.maxReceiveCount, survivingOutage ?? 0),
    'maxReceiveCount',
    min,
    max,
  );
  const fifo = props.fifo ?? d.fifo;
  const retention = props.retentionPeriod ?? d.retentionPeriod;
  const retentionSeconds = seconds(retention, 'retentionPeriod', Duration.minutes(1), DLQ_RETENTION);

  let visibility = minimumVisibility;
  if (props.visibilityTimeout !== undefined) {
    visibility = seconds(props.visibilityTimeout, 'visibilityTimeout', Duration.seconds(0), SQS_MAX_VISIBILITY);
    check(
      visibility >= minimumVisibility,
      'visibilityTimeout',
      `(${visibility} s) must be at least ${VISIBILITY_TIMEOUT_FACTOR} × timeout + maxBatchingWindow = ${minimumVisibility} s, or Lambda may hand a batch to a second invocation while the first still runs`,
    );
  }
  let names: QueuesToCreate['names'];
  if (props.queueName !== undefined) {
    const base = props.queueName.endsWith(FIFO_SUFFIX) ? props.queueName.slice(0, -FIFO_SUFFIX.length) : props.queueName;
    const suffix = fifo ? FIFO_SUFFIX : '';
    const queue = `${base}${suffix}`;
    const dlq = deadLetterQueueName(queue);
    // SQS: 1-80 characters of letters, digits, - and _, the .fifo suffix included.
    check(
      /^[A-Za-z0-9_-]+$/.test(base) && dlq.length <= 80,
      'queueName',
      `must be letters, digits, "-" or "_", short enough that "<name>-dlq${suffix}" fits 80 characters; got ${JSON.stringify(props.queueName)}`,
    );
    names = { queue, dlq };
  }
  // A message must outlive its retries, or SQS deletes it before it ever reaches the DLQ.
  const window = retryWindowSeconds(props, maxReceiveCount, visibility, breaker);
  check(
    retentionSeconds >= window,
    'retentionPeriod',
    `(${retention.toHumanString()}) is shorter than the longest retry window these settings allow (${Math.ceil(window / 3600)} hours for ${maxReceiveCount} receives): messages could expire before reaching the DLQ. Raise retentionPeriod (up to 14 days) or lower maxReceiveCount`,
  );
  return { queues: { kind: 'create', fifo, names, retention, visibilitySeconds: visibility }, maxReceiveCount };
}

function resolveExistingQueues(
  props: WebhookRelayProps,
  queue: sqs.IQueue,
  timeoutSeconds: number,
  minimumVisibility: number,
  warnings: ResolvedWarning[],
): { queues: ExistingQueues; maxReceiveCount: number } {
  for (const prop of ['queueName', 'retentionPeriod', 'visibilityTimeout'] as const) {
    check(props[prop] === undefined, prop, 'applies to a queue the construct creates; an existing queue keeps its own settings');
  }
  check(
    props.fifo === undefined || props.fifo === queue.fifo,
    'fifo',
    `is ${props.fifo}, but the existing queue is ${queue.fifo ? '' : 'not '}FIFO`,
  );
  let deadLetterQueue = props.deadLetterQueue;
  let maxReceiveCount = props.maxReceiveCount ?? RELAY_DEFAULTS.maxReceiveCount;
  if (queue instanceof sqs.Queue) {
    const own = queue.deadLetterQueue;
    if (own !== undefined) {
      check(
        deadLetterQueue === undefined || deadLetterQueue === own.queue,
        'deadLetterQueue',
        'differs from the dead-letter queue of the queue passed in; leave it unset',
      );
      check(
        props.maxReceiveCount === undefined || props.maxReceiveCount === own.maxReceiveCount,
        'maxReceiveCount',
        `(${props.maxReceiveCount}) differs from the queue's redrive policy (${own.maxReceiveCount}); leave it unset`,
      );
      deadLetterQueue = own.queue;
      maxReceiveCount = own.maxReceiveCount;
    }
    // Lambda refuses an event source whose queue hides messages for less than the function may
    // run; below 6× it works but a throttled retry can deliver a batch twice.
    const cfn = queue.node.defaultChild;
    if (cfn instanceof sqs.CfnQueue && !Token.isUnresolved(cfn.visibilityTimeout)) {
      const visibility = cfn.visibilityTimeout ?? 30;
      check(
        visibility >= timeoutSeconds,
        'queue',
        `has a visibility timeout of ${visibility} s, shorter than the function timeout (${timeoutSeconds} s): Lambda would reject the event source`,
      );
      if (visibility < minimumVisibility) {
        warnings.push({
          id: 'sqs-webhook-relay:visibilityBelowRecommendation',
          message: `The queue's visibility timeout (${visibility} s) is below ${VISIBILITY_TIMEOUT_FACTOR} × timeout + maxBatchingWindow (${minimumVisibility} s): a batch may be delivered twice after a throttled invocation.`,
        });
      }
    }
  }
  check(
    deadLetterQueue !== undefined,
    'deadLetterQueue',
    'is required with an existing queue that has no dead-letter queue the construct can see: pass the DLQ of its redrive policy (and maxReceiveCount), or a Queue created with deadLetterQueue',
  );
  const dlq = deadLetterQueue;
  check(
    dlq.fifo === queue.fifo,
    'deadLetterQueue',
    `must be of the same kind as the queue (${queue.fifo ? 'FIFO' : 'standard'}), as SQS requires`,
  );
  wholeNumber(maxReceiveCount, 'maxReceiveCount', SETTINGS.MAX_RECEIVE_COUNT.min, SETTINGS.MAX_RECEIVE_COUNT.max);
  return { queues: { kind: 'existing', queue, deadLetterQueue: dlq }, maxReceiveCount };
}

/** The receives an outage of `outageTolerance` takes with the breaker's intervals, if one is asked for. */
function receivesForOutage(props: WebhookRelayProps, breaker: BreakerSettings): number | undefined {
  if (props.outageTolerance === undefined) return undefined;
  const tolerance = seconds(props.outageTolerance, 'outageTolerance', Duration.minutes(1), Duration.days(14));
  check(breaker.threshold > 0, 'outageTolerance', 'relies on the circuit breaker, which outageThreshold 0 switches off');
  return receivesToSurvive(tolerance / 3600, breaker);
}

/**
 * The longest a message can take through `maxReceiveCount` receives under this relay's own
 * policies (a webhook's `Retry-After` aside): each receive parks it for the longest of its backoff
 * delay (with full jitter), the breaker's longest interval and the queue's visibility timeout.
 */
export function retryWindowSeconds(
  props: WebhookRelayProps,
  maxReceiveCount: number,
  visibilitySeconds: number,
  breaker: BreakerSettings,
): number {
  const d = RELAY_DEFAULTS;
  const settings = {
    policy: props.backoff ?? d.backoff,
    baseSeconds: (props.backoffBase ?? d.backoffBase).toSeconds(),
    maxSeconds: (props.backoffMax ?? d.backoffMax).toSeconds(),
    jitter: props.backoffJitter ?? d.backoffJitter,
    schedule: props.backoffSchedule?.map((delay) => delay.toSeconds()),
  };
  // An unknown policy is reported by the environment's validation, with the prop's name.
  if (!(BACKOFF_POLICIES as readonly string[]).includes(settings.policy)) return 0;
  const breakerSeconds = breaker.threshold > 0 ? breaker.maxIntervalSeconds : 0;
  let window = 0;
  for (let receive = 1; receive <= maxReceiveCount; receive += 1) {
    const backoff = backoffDelay(settings, receive, () => 0.999_999) ?? visibilitySeconds;
    window += Math.min(MAX_VISIBILITY_SECONDS, Math.max(backoff, breakerSeconds, visibilitySeconds));
  }
  return window;
}
