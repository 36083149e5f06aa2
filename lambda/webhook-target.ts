/**
 * Where the relay sends: the webhook's URL and the pool of connections to it. The URL is given
 * (`WEBHOOK_URL`) or read from Secrets Manager (`WEBHOOK_URL_SECRET_ARN`, for a URL that embeds a
 * token), then kept fresh as the other secrets are (secrets.ts: re-read every
 * `SECRETS_REFRESH_SECONDS`, the last good value kept). When it changes, requests go to the new
 * URL on a new pool; the old pool is closed once the batch that used it has ended.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { parseWebhookUrlSecret, type RelayConfig } from './config';
import type { DeliveryConfig } from './request';
import { CachedSecret, type CachedSecretOptions } from './secrets';
import type { WebhookTransmitter } from './transmitter';

/** The webhook as a request sees it: the configuration to build the request with, and the transmitter to send it by. */
export interface Target {
  readonly config: DeliveryConfig;
  readonly transmitter: WebhookTransmitter;
}

/** What a {@link WebhookTarget} may be given besides the configuration. */
export interface WebhookTargetOptions extends CachedSecretOptions {
  /** Told when requests go to a new URL read from Secrets Manager (its host only: a path may hold a token). */
  readonly logger?: Pick<Logger, 'info' | 'warn' | 'error'>;
}

/** The webhook's URL and the transmitter for it. Long-lived: one per warm container. */
export class WebhookTarget {
  private current: Target | undefined;
  private readonly url: CachedSecret<URL> | undefined;
  /** Transmitters of URLs replaced, closed at the end of the batch (requests of this batch may still use them). */
  private retired: WebhookTransmitter[] = [];
  private readonly logger: WebhookTargetOptions['logger'];

  /**
   * @param transmitterFor makes the transmitter (its pool of connections) for a URL
   * @throws {Error} when the configuration has neither a URL nor its secret (`loadConfig` never gives one)
   */
  constructor(
    private readonly config: RelayConfig,
    private readonly transmitterFor: (url: URL) => WebhookTransmitter,
    options: WebhookTargetOptions = {},
  ) {
    this.logger = options.logger;
    if (config.webhookUrl !== undefined) {
      this.current = { config: { ...config, webhookUrl: config.webhookUrl }, transmitter: transmitterFor(config.webhookUrl) };
    } else if (config.webhookUrlSecret !== undefined) {
      const { allowInsecureHttp } = config;
      this.url = new CachedSecret(
        config.webhookUrlSecret,
        'webhook URL secret',
        (raw) => parseWebhookUrlSecret(raw, allowInsecureHttp),
        config.secretsRefreshSeconds,
        options,
      );
    } else {
      throw new Error('the configuration has no webhook URL (WEBHOOK_URL or WEBHOOK_URL_SECRET_ARN)');
    }
  }

  /** The target if its URL is in memory and current: no promise, for the per-record hot path. */
  peek(): Target | undefined {
    if (this.url === undefined) return this.current;
    const url = this.url.peek();
    return url === undefined ? undefined : this.at(url);
  }

  /**
   * The target, its URL read from Secrets Manager when due (by one record for all that find it due).
   * @param signal abandons the read; the URL read before is then kept
   * @throws when no URL was ever read and none can be now (the record is retried, never sent elsewhere)
   */
  async get(signal?: AbortSignal): Promise<Target> {
    if (this.url === undefined) return this.current as Target;
    return this.at(await this.url.get(signal));
  }

  /** The target for `url`: the current one, or a new one when the secret now holds another URL. */
  private at(url: URL): Target {
    const current = this.current;
    if (current?.config.webhookUrl === url) return current;
    if (current !== undefined) {
      this.retired.push(current.transmitter);
      this.logger?.info('Webhook URL changed in Secrets Manager: sending to the new one', { host: url.host });
    }
    this.current = { config: { ...this.config, webhookUrl: url }, transmitter: this.transmitterFor(url) };
    return this.current;
  }

  /** Closes the connections to URLs replaced: call when no request of the batch is left in flight. */
  closeRetired(): void {
    for (const transmitter of this.retired) transmitter.close();
    this.retired = [];
  }

  /** Closes every kept-alive connection. */
  close(): void {
    this.closeRetired();
    this.current?.transmitter.close();
  }
}
