/**
 * Finding queue URLs. Lambda's records name their queue only by ARN; the URL that SQS API
 * calls need is asked of SQS itself (`GetQueueUrl`), so it is right for real SQS, VPC
 * endpoints and emulators alike (fauxqs's URLs look like
 * `http://sqs.<region>.localhost:<port>/000000000000/<name>` and must match exactly).
 * Answers are cached for the life of the container; failures are not, so the next record retries.
 * A directory obtained with {@link QueueDirectory.until} shares the caches and bounds its lookups
 * by a signal (see deadline.ts).
 */
import type { SqsGateway } from './sqs-gateway';
import { parseQueueArn } from './sqs-util';

/** What a directory has learnt, shared with the directories made from it by {@link QueueDirectory.until}. */
interface DirectoryCaches {
  readonly urls: Map<string, Promise<string>>;
  readonly deadLetterUrls: Map<string, Promise<string>>;
}

/** Resolves queue ARNs to URLs, and source queues to their dead-letter queues, with caching. */
export class QueueDirectory {
  private readonly urls: Map<string, Promise<string>>;
  private readonly deadLetterUrls: Map<string, Promise<string>>;

  /**
   * @param sqs the client every lookup goes through
   * @param configuredDeadLetterUrl `DLQ_URL`, which wins over discovery from the redrive policy
   */
  constructor(
    private readonly sqs: SqsGateway,
    private readonly configuredDeadLetterUrl: string | undefined,
    caches: DirectoryCaches = { urls: new Map(), deadLetterUrls: new Map() },
  ) {
    this.urls = caches.urls;
    this.deadLetterUrls = caches.deadLetterUrls;
  }

  /**
   * This directory (same caches) with its SQS lookups abandoned when `signal` aborts. A lookup
   * abandoned so fails only its callers and is forgotten: the next one asks SQS again.
   */
  until(signal: AbortSignal): QueueDirectory {
    return new QueueDirectory(this.sqs.until(signal), this.configuredDeadLetterUrl, {
      urls: this.urls,
      deadLetterUrls: this.deadLetterUrls,
    });
  }

  /** The URL of the queue with this ARN. */
  urlOf(queueArn: string): Promise<string> {
    return this.cached(this.urls, queueArn, async () => {
      const { name, account } = parseQueueArn(queueArn);
      const QueueUrl = await this.sqs.getQueueUrl(name, account);
      if (QueueUrl === undefined) throw new Error(`GetQueueUrl returned no URL for ${queueArn}`);
      return QueueUrl;
    });
  }

  /** The URL of the dead-letter queue of the queue with this ARN: `DLQ_URL`, or its redrive policy's target. */
  deadLetterUrlOf(sourceQueueArn: string): Promise<string> {
    const configured = this.configuredDeadLetterUrl;
    if (configured !== undefined) return Promise.resolve(configured);
    return this.cached(this.deadLetterUrls, sourceQueueArn, async () => {
      const policy = await this.sqs.getQueueAttribute(await this.urlOf(sourceQueueArn), 'RedrivePolicy');
      const target = policy === undefined ? undefined : (JSON.parse(policy) as { deadLetterTargetArn?: string }).deadLetterTargetArn;
      if (target === undefined) throw new Error(`queue ${sourceQueueArn} has no redrive policy and DLQ_URL is not set`);
      return this.urlOf(target);
    });
  }

  private cached(cache: Map<string, Promise<string>>, key: string, lookup: () => Promise<string>): Promise<string> {
    let pending = cache.get(key);
    if (pending === undefined) {
      pending = lookup();
      cache.set(key, pending);
      pending.catch(() => cache.delete(key));
    }
    return pending;
  }
}
