/**
 * Carrier's health check for the local runner and daemon mode: with `WEBHOOK_HEALTH_CHECK_URL`
 * set, polling waits until that URL answers 2xx and pauses while it does not, so a worker that
 * is starting or down is not handed messages (which would only spend their receives).
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { type Agent, request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { RelayConfig } from '../lambda/config';
import { connectingAgent, webhookConnector } from '../lambda/connector';
import { connectionErrorText } from '../lambda/tls-material';
import { sleep } from './sleep';

/** How long one health check may take. */
export const HEALTH_CHECK_TIMEOUT_MS = 2_000;

/**
 * The agent that reaches `url` as the relay reaches its webhook (connector.ts): through the proxy when one applies to it,
 * trusting the private CA, presenting the client certificate; `undefined` when none applies (node's own agent). A
 * webhook reached only so would otherwise fail every check, and polling would never start.
 * @param logger where the certificate's read failures and refusals are logged (shared with the webhook's requests)
 */
export function healthCheckAgent(
  url: URL,
  config: Pick<RelayConfig, 'proxy' | 'clientCertificate' | 'secretsRefreshSeconds' | 'requestTimeoutMs'>,
  logger: Pick<Logger, 'warn' | 'error' | 'info'>,
): Agent | undefined {
  const connector = webhookConnector({ ...config, webhookUrl: url }, logger);
  if (connector === undefined) return undefined;
  const { Agent: Base } = process.getBuiltinModule(url.protocol === 'https:' ? 'node:https' : 'node:http');
  // One check per interval needs no pool.
  return new (connectingAgent(Base, connector))({ keepAlive: false });
}

/** What one check found: a pass, or why not (the answer's status, or what kept it from one), for the operator. */
export type HealthVerdict = { readonly healthy: true } | { readonly healthy: false; readonly reason: string };

/**
 * Whether `url` answers a GET with a 2xx within the timeout, and if not, why. Never throws.
 * @param agent how to reach it ({@link healthCheckAgent}); `undefined`: directly
 */
export function checkHealth(url: URL, timeoutMs = HEALTH_CHECK_TIMEOUT_MS, agent?: Agent): Promise<HealthVerdict> {
  return new Promise((resolve) => {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const failed = (reason: string): void => resolve({ healthy: false, reason });
    let request: ReturnType<typeof httpRequest>;
    try {
      request = send(url, {
        method: 'GET',
        timeout: timeoutMs,
        headers: { 'User-Agent': 'sqs-webhook-relay health check' },
        ...(agent === undefined ? {} : { agent }),
      });
    } catch (error) {
      failed(connectionErrorText(error));
      return;
    }
    let timedOut = false;
    request.on('response', (response) => {
      response.resume(); // drain: only the status matters
      const status = response.statusCode ?? 0;
      if (status >= 200 && status <= 299) resolve({ healthy: true });
      else failed(`it answered HTTP ${status}`);
    });
    request.on('timeout', () => {
      timedOut = true;
      request.destroy();
    });
    // Its code and message: a proxy's refusal, a CA to give (tls-material.ts), a refused connection.
    request.on('error', (error) => failed(timedOut ? `no answer within ${timeoutMs} ms` : connectionErrorText(error)));
    request.end();
  });
}

/** Tells about changes of health. */
export interface HealthObserver {
  /** @param reason why the check that found it failing failed */
  unhealthy?(url: string, reason: string): void;
  healthy?(url: string): void;
}

/**
 * A gate in front of polling. `whenHealthy()` resolves at once while the last check passed;
 * otherwise it re-checks every `intervalMs` until a check passes (or `signal` aborts).
 */
export class HealthGate {
  private lastHealthy: boolean | undefined;
  private lastCheckedAt = 0;
  private pending: Promise<HealthVerdict> | undefined;

  constructor(
    private readonly url: URL,
    private readonly intervalMs: number,
    private readonly observer: HealthObserver = {},
    private readonly check: (url: URL) => Promise<HealthVerdict> = checkHealth,
  ) {}

  /** Resolves when the webhook is healthy, re-checking at most once per interval; resolves early if `signal` aborts. */
  async whenHealthy(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      const due = this.lastHealthy === undefined || Date.now() - this.lastCheckedAt >= this.intervalMs;
      if (due) await this.refresh();
      if (this.lastHealthy === true) return;
      // A signal aborted during the check ends this at once: its 'abort' event has been and gone.
      await sleep(Math.max(0, this.lastCheckedAt + this.intervalMs - Date.now()), signal);
    }
  }

  private async refresh(): Promise<void> {
    // Several pollers share one gate and so one request per interval.
    this.pending ??= this.check(this.url).finally(() => {
      this.pending = undefined;
    });
    const verdict = await this.pending;
    this.lastCheckedAt = Date.now();
    if (verdict.healthy !== this.lastHealthy) {
      if (verdict.healthy) this.observer.healthy?.(this.url.href);
      else this.observer.unhealthy?.(this.url.href, verdict.reason);
    }
    this.lastHealthy = verdict.healthy;
  }
}
