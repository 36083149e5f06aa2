/**
 * The queues' part of resolving the props: the queues to create or the ones passed in, the retry
 * window, the redrive policy's receive count (the window's backstop, or SQS's count semantics when
 * `maxReceiveCount` is given for a created queue or the window is 0 for an existing one), the
 * visibility timeout and the retention checked against the time a message can take.
 */
import { Duration, Stack, Token } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import {
  DEFAULT_RETENTION_SECONDS,
  DEFAULT_VISIBILITY_SECONDS,
  MAX_QUEUE_NAME_LENGTH,
  MAX_RETENTION_DAYS,
  MAX_VISIBILITY_SECONDS,
  VISIBILITY_TIMEOUT_FACTOR,
  visibilityTimeoutSecondsFor,
} from '../../lambda/aws-limits';
import type { BreakerSettings } from '../../lambda/breaker';
import { backoffDelay } from '../../lambda/retry-timing';
import { backstopReceiveCount, retryWindowMarginSeconds } from '../../lambda/retry-window';
import { durationText } from '../../lambda/duration-text';
import { BACKOFF_POLICIES, SETTINGS } from '../../lambda/settings';
import { deadLetterQueueName, FIFO_SUFFIX, isQueueName } from '../../lambda/sqs-util';
import { check, seconds, settingNumber, settingSeconds } from './checks';
import { DLQ_RETENTION, RELAY_DEFAULTS } from './defaults';
import type { WebhookRelayProps } from './props';
import type { ResolvedWarning } from './resolve';

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

/** What the queues' part resolves to. */
export interface ResolvedQueues {
  readonly queues: QueuesToCreate | ExistingQueues;
  /** The redrive policy's receive count: the window's backstop, or SQS's count semantics. */
  readonly maxReceiveCount: number;
  /** The retry window, whole seconds; 0 when it is off (`maxReceiveCount` given for a created queue, `retryWindow` 0 for an existing one). */
  readonly retryWindowSeconds: number;
}

/** The queues to create, or the ones passed in, with the retry window and the redrive policy's receive count. */
export function resolveQueues(
  props: WebhookRelayProps,
  timeoutSeconds: number,
  windowSeconds: number,
  breaker: BreakerSettings,
  warnings: ResolvedWarning[],
): ResolvedQueues {
  const d = RELAY_DEFAULTS;
  const minimumVisibility = visibilityTimeoutSecondsFor(timeoutSeconds, windowSeconds);

  if (props.queue !== undefined) {
    // The queue's redrive policy is given, not chosen here: its count is the window's backstop,
    // or, with the window switched off (0), what gives up on a message (SQS's count semantics).
    const retryWindow = retryWindowOf(props.retryWindow ?? d.retryWindow, true);
    const existing = resolveExistingQueues(props, props.queue, timeoutSeconds, minimumVisibility, retryWindow, warnings);
    return { ...existing, retryWindowSeconds: retryWindow };
  }
  check(
    props.deadLetterQueue === undefined,
    'deadLetterQueue',
    'is only for an existing queue (pass queue too); the construct creates its own DLQ otherwise',
  );
  check(
    props.retryWindow === undefined || props.maxReceiveCount === undefined,
    'retryWindow',
    "and maxReceiveCount are two ways of giving up on a message; give one: retryWindow (a time; maxReceiveCount is then derived as a backstop for crashes) or maxReceiveCount alone (SQS's count semantics, the window off)",
  );
  const retryWindow = props.maxReceiveCount === undefined ? retryWindowOf(props.retryWindow ?? d.retryWindow, false) : 0;
  const fifo = props.fifo ?? d.fifo;
  const retention = props.retentionPeriod ?? d.retentionPeriod;
  const retentionSeconds = settingSeconds(SETTINGS.retentionPeriodDays, retention);

  let visibility = minimumVisibility;
  if (props.visibilityTimeout !== undefined) {
    visibility = settingSeconds(SETTINGS.visibilityTimeoutSeconds, props.visibilityTimeout);
    check(
      visibility >= minimumVisibility,
      'visibilityTimeout',
      `(${visibility} s) must be at least ${VISIBILITY_TIMEOUT_FACTOR} × timeout + maxBatchingWindow = ${minimumVisibility} s, or Lambda may hand a batch to a second invocation while the first still runs`,
    );
  }
  const maxReceiveCount =
    retryWindow > 0
      ? backstopReceiveCount(retryWindow, visibility)
      : settingNumber(SETTINGS.MAX_RECEIVE_COUNT, props.maxReceiveCount ?? d.maxReceiveCount);
  let names: QueuesToCreate['names'];
  if (props.queueName !== undefined) {
    // Stripping the suffix off a standard queue's name would create another queue than the one named.
    check(
      fifo || !props.queueName.endsWith(FIFO_SUFFIX),
      'queueName',
      `ends in ${FIFO_SUFFIX}, a FIFO queue's name, but fifo is not true: set fifo (-c fifo=true) for FIFO queues, or drop ${FIFO_SUFFIX}; got ${JSON.stringify(props.queueName)}`,
    );
    const base = props.queueName.endsWith(FIFO_SUFFIX) ? props.queueName.slice(0, -FIFO_SUFFIX.length) : props.queueName;
    const suffix = fifo ? FIFO_SUFFIX : '';
    const queue = `${base}${suffix}`;
    const dlq = deadLetterQueueName(queue);
    check(
      isQueueName(queue) && isQueueName(dlq),
      'queueName',
      `must be letters, digits, "-" or "_", short enough that "<name>-dlq${suffix}" fits ${MAX_QUEUE_NAME_LENGTH} characters; got ${JSON.stringify(props.queueName)}`,
    );
    names = { queue, dlq };
  }
  // A message must outlive its retries, or SQS deletes it before it ever reaches the DLQ.
  if (retryWindow > 0) {
    const margin = retryWindowMarginSeconds(visibility);
    const longest = DLQ_RETENTION.toSeconds() - margin;
    check(
      retryWindow <= longest,
      'retryWindow',
      `(${durationText(retryWindow, 'hours')}) plus its margin of ${durationText(margin)} (a last Retry-After may park a message for SQS's longest ${durationText(MAX_VISIBILITY_SECONDS)}, then one visibility timeout for the attempt that gives up on it) is longer than SQS keeps a message (${MAX_RETENTION_DAYS} days): at most ${durationText(longest, 'hours')} (${Number((longest / 3600).toFixed(2))} hours) with a visibility timeout of ${visibility} s`,
    );
    const needed = retryWindow + margin;
    // In whole days first: -c retentionPeriodDays takes nothing finer.
    const neededDays = Math.ceil(needed / 86_400) * 86_400;
    check(
      retentionSeconds >= needed,
      'retentionPeriod',
      `(${durationText(retentionSeconds)}) is shorter than retryWindow (${durationText(retryWindow, 'hours')}) plus its margin of ${durationText(margin)} (a last Retry-After may park a message for SQS's longest ${durationText(MAX_VISIBILITY_SECONDS)}, then one visibility timeout for the attempt that gives up on it): messages could expire before they are dead-lettered. Raise retentionPeriod to at least ${durationText(neededDays)} (the whole days covering ${durationText(needed)}; up to ${MAX_RETENTION_DAYS} days) or shorten retryWindow`,
    );
  } else {
    const span = countedRetrySpanSeconds(props, maxReceiveCount, visibility, breaker);
    check(
      retentionSeconds >= span,
      'retentionPeriod',
      `(${durationText(retentionSeconds)}) is shorter than the longest ${maxReceiveCount} receives can take with these settings (${durationText(span)}): messages could expire before reaching the DLQ. Raise retentionPeriod (up to ${MAX_RETENTION_DAYS} days) or lower maxReceiveCount`,
    );
  }
  return {
    queues: { kind: 'create', fifo, names, retention, visibilitySeconds: visibility },
    maxReceiveCount,
    retryWindowSeconds: retryWindow,
  };
}

/**
 * The retry window in whole seconds, within the registry's bounds (1 minute to 13 days 11 hours 57 minutes), or 0 (off).
 * @param zeroMeansOff an existing queue's window may be 0, leaving its own count to decide; a
 *   created queue's is switched off by `maxReceiveCount` instead, and 0 is refused
 */
function retryWindowOf(window: Duration, zeroMeansOff: boolean): number {
  const { max, minAboveZero } = SETTINGS.RETRY_WINDOW_HOURS;
  if (window.toMilliseconds({ integral: false }) === 0) {
    check(
      zeroMeansOff,
      'retryWindow',
      "cannot be 0: to give up after a number of receives instead (SQS's count semantics), leave retryWindow unset and set maxReceiveCount",
    );
    return 0;
  }
  const [least, longest] = [Math.round(minAboveZero * 3600), Math.round(max * 3600)];
  // Whole seconds first (any amount); then the bounds, the longest to the minute (Duration's own text rounds it away).
  const result = seconds(window, 'retryWindow', Duration.seconds(0), Duration.seconds(Number.MAX_SAFE_INTEGER));
  check(
    result >= least && result <= longest,
    'retryWindow',
    `must be from ${durationText(least)} to ${durationText(longest)} (${max} hours); got ${window.toHumanString()}`,
  );
  return result;
}

function resolveExistingQueues(
  props: WebhookRelayProps,
  queue: sqs.IQueue,
  timeoutSeconds: number,
  minimumVisibility: number,
  retryWindow: number,
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
  let knownVisibility: number | undefined;
  let knownRetention: number | undefined;
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
      const visibility = cfn.visibilityTimeout ?? DEFAULT_VISIBILITY_SECONDS;
      knownVisibility = visibility;
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
    knownRetention = knownRetentionSeconds(queue);
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
  settingNumber(SETTINGS.MAX_RECEIVE_COUNT, maxReceiveCount);
  warnings.push(...protectionWarnings(queue, dlq));
  // SQS's default is 4 days: a DLQ left at it deletes dead letters before the age alarm (10 days) fires.
  const dlqRetention = dlq instanceof sqs.Queue ? knownRetentionSeconds(dlq) : undefined;
  if (dlqRetention !== undefined && dlqRetention < DLQ_RETENTION.toSeconds()) {
    warnings.push({
      id: 'sqs-webhook-relay:deadLetterRetentionShort',
      message: `The deadLetterQueue keeps a message ${durationText(dlqRetention)}, less than the ${durationText(DLQ_RETENTION.toSeconds())} of the DLQ the construct creates, which the dlq-oldest-message-age alarm counts on: a dead letter is deleted unseen ${durationText(dlqRetention)} after it arrives, before that alarm fires if its threshold is longer. Create it with retentionPeriod: Duration.days(${DLQ_RETENTION.toDays()}).`,
    });
  }
  const result = { queues: { kind: 'existing', queue, deadLetterQueue: dlq }, maxReceiveCount } as const;
  if (retryWindow === 0) return result; // SQS's count semantics: the queue's count is the rule, not a backstop
  // An imported queue's visibility timeout is unknown here: judge by the one it should have.
  const visibility = knownVisibility ?? minimumVisibility;
  const backstop = backstopReceiveCount(retryWindow, visibility);
  if (maxReceiveCount < backstop) {
    warnings.push({
      id: 'sqs-webhook-relay:backstopBelowWindow',
      message: `The queue's redrive policy moves a message to the DLQ after ${maxReceiveCount} receives, fewer than the ${backstop} a retry window of ${durationText(retryWindow, 'hours')} takes at a visibility timeout of ${visibility} s: the window may end at the backstop first (retries are spread thin, and invocations that crash or time out dead-letter a message early). Raise the redrive policy's maxReceiveCount to ${backstop}, shorten retryWindow, or set it to 0 for SQS's count semantics (the queue's count alone decides).`,
    });
  }
  // The queue is the caller's: a short retention is told, not refused.
  const needed = retryWindow + retryWindowMarginSeconds(visibility);
  if (knownRetention !== undefined && knownRetention < needed) {
    warnings.push({
      id: 'sqs-webhook-relay:retentionBelowWindow',
      message: `The queue keeps a message ${durationText(knownRetention)}, less than the retry window (${durationText(retryWindow, 'hours')}) plus its margin (${durationText(needed - retryWindow)}): a message could expire before it is dead-lettered. Give the queue a retention of at least ${durationText(needed)}, or shorten retryWindow.`,
    });
  }
  return result;
}

/** How long a queue of this app keeps a message, seconds (SQS's default when unset); undefined when a token decides. */
function knownRetentionSeconds(queue: sqs.Queue): number | undefined {
  const cfn = queue.node.defaultChild;
  if (!(cfn instanceof sqs.CfnQueue) || Token.isUnresolved(cfn.messageRetentionPeriod)) return undefined;
  return cfn.messageRetentionPeriod ?? DEFAULT_RETENTION_SECONDS;
}

/**
 * With SQS's count semantics (the retry window off), the longest a message can take through
 * `maxReceiveCount` receives under this relay's own policies (a webhook's `Retry-After` aside):
 * each receive parks it for the longest of its backoff delay (with full jitter), the breaker's
 * longest interval and the queue's visibility timeout.
 */
export function countedRetrySpanSeconds(
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
  const breakerSeconds = breaker.threshold > 0 ? breaker.maxHoldSeconds : 0;
  let window = 0;
  for (let receive = 1; receive <= maxReceiveCount; receive += 1) {
    const backoff = backoffDelay(settings, receive, () => 0.999_999) ?? visibilitySeconds;
    window += Math.min(MAX_VISIBILITY_SECONDS, Math.max(backoff, breakerSeconds, visibilitySeconds));
  }
  return window;
}

/**
 * True when a queue of this app refuses requests made without TLS: a queue policy of its stack
 * (its own, as `enforceSSL` writes, or one naming it) denies `aws:SecureTransport` false.
 */
function deniesPlainHttp(queue: sqs.Queue): boolean {
  const policies = Stack.of(queue)
    .node.findAll()
    .filter((construct): construct is sqs.QueuePolicy => construct instanceof sqs.QueuePolicy)
    .filter((policy) => {
      const cfn = policy.node.defaultChild;
      return cfn instanceof sqs.CfnQueuePolicy && Array.isArray(cfn.queues) && cfn.queues.includes(queue.queueUrl);
    });
  const statements = policies.flatMap(
    (policy) => (policy.document.toJSON() as { Statement?: Record<string, unknown>[] } | undefined)?.Statement ?? [],
  );
  return statements.some((statement) => {
    const secure = (statement.Condition as { Bool?: Record<string, unknown> } | undefined)?.Bool?.['aws:SecureTransport'];
    return statement.Effect === 'Deny' && (secure === 'false' || secure === false);
  });
}

/**
 * Warnings about queues passed in that are not protected as the created ones are (encrypted at
 * rest, TLS only): messages carry what producers send, and the function signs and delivers them.
 * A queue of this app is checked; an imported one cannot be, which is said once for both, with
 * an imported DLQ's retention, which the dead-letter age alarm counts on.
 */
function protectionWarnings(queue: sqs.IQueue, deadLetterQueue: sqs.IQueue): ResolvedWarning[] {
  const warnings: ResolvedWarning[] = [];
  const imported: string[] = [];
  for (const [role, candidate] of [
    ['queue', queue],
    ['deadLetterQueue', deadLetterQueue],
  ] as const) {
    // A queue of this app names itself in its resource (when it is given a name); an imported one in its ARN.
    const cfn = candidate.node.defaultChild;
    const given = cfn instanceof sqs.CfnQueue ? cfn.queueName : candidate.queueName;
    const name = given === undefined || Token.isUnresolved(given) ? role : `${role} (${given})`;
    if (!(candidate instanceof sqs.Queue)) {
      imported.push(name);
      continue;
    }
    // Left unset, SQS encrypts a new queue with SSE-SQS; only UNENCRYPTED switches that off.
    if (candidate.encryptionType === sqs.QueueEncryption.UNENCRYPTED) {
      warnings.push({
        id: 'sqs-webhook-relay:queueNotEncrypted',
        message: `The ${name} is not encrypted at rest (encryption: UNENCRYPTED), unlike the queues the construct creates: use QueueEncryption.SQS_MANAGED or KMS.`,
      });
    }
    if (!deniesPlainHttp(candidate)) {
      warnings.push({
        id: 'sqs-webhook-relay:queueAllowsPlainHttp',
        message: `The ${name} accepts requests without TLS, unlike the queues the construct creates: create it with enforceSSL: true (a policy denying aws:SecureTransport false).`,
      });
    }
  }
  if (imported.length > 0) {
    // An imported DLQ's retention is unseen too: at SQS's default of 4 days, dead letters go before the age alarm fires.
    const dlqImported = !(deadLetterQueue instanceof sqs.Queue);
    const attributes = ['SqsManagedSseEnabled', 'KmsMasterKeyId', 'Policy', ...(dlqImported ? ['MessageRetentionPeriod'] : [])];
    const wanted = [
      'SSE-SQS or KMS',
      'a policy denying aws:SecureTransport false',
      ...(dlqImported
        ? [
            `a MessageRetentionPeriod of ${DLQ_RETENTION.toSeconds()} (${durationText(DLQ_RETENTION.toSeconds())}) on the deadLetterQueue, which the dlq-oldest-message-age alarm counts on`,
          ]
        : []),
    ];
    warnings.push({
      id: 'sqs-webhook-relay:importedQueueProtection',
      message: `The construct cannot see whether the imported ${imported.join(' and ')} ${imported.length > 1 ? 'are' : 'is'} encrypted at rest and refuse${imported.length > 1 ? '' : 's'} requests without TLS, as the queues it creates do${dlqImported ? ', nor how long the deadLetterQueue keeps a dead letter' : ''}. Check (aws sqs get-queue-attributes --attribute-names ${attributes.join(' ')}): ${wanted.slice(0, -1).join(', ')}, and ${wanted.at(-1)}; then acknowledge this warning.`,
    });
  }
  return warnings;
}
