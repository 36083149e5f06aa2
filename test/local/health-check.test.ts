/**
 * The health gate in front of polling: a real HTTP endpoint on 127.0.0.1 that fails, then passes.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, test } from 'vitest';
import { checkHealth, HealthGate, type HealthVerdict } from '../../local/health-check';

let server: Server | undefined;
afterEach(() => {
  server?.closeAllConnections();
  server?.close();
  server = undefined;
});

async function endpoint(answer: () => number | 'hang'): Promise<{ url: URL; hits: () => number }> {
  let hits = 0;
  server = createServer((_req, res) => {
    hits += 1;
    const status = answer();
    if (status !== 'hang') res.writeHead(status).end();
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return { url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/health`), hits: () => hits };
}

test('checkHealth: 2xx passes; 5xx, a refused connection and a timeout fail, each saying why', async () => {
  let status: number | 'hang' = 204;
  const { url } = await endpoint(() => status);
  expect(await checkHealth(url)).toEqual({ healthy: true });
  status = 503;
  expect(await checkHealth(url)).toEqual({ healthy: false, reason: 'it answered HTTP 503' });
  status = 'hang';
  expect(await checkHealth(url, 100)).toEqual({ healthy: false, reason: 'no answer within 100 ms' });
  expect(await checkHealth(new URL('http://127.0.0.1:9/health'))).toEqual({
    healthy: false,
    reason: expect.stringMatching(/^ECONNREFUSED: connect ECONNREFUSED 127\.0\.0\.1:9$/),
  });
});

test('HealthGate waits while failing, re-checking once per interval, tells both transitions, and resolves once it passes', async () => {
  let healthy = false;
  const { url, hits } = await endpoint(() => (healthy ? 200 : 500));
  const events: string[] = [];
  const gate = new HealthGate(url, 50, {
    unhealthy: (_url, reason) => events.push(`unhealthy: ${reason}`),
    healthy: () => events.push('healthy'),
  });
  const stop = new AbortController();
  let passed = false;
  const waiting = gate.whenHealthy(stop.signal).then(() => {
    passed = true;
  });
  while (hits() < 3) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(passed).toBe(false);
  healthy = true;
  await waiting;
  expect(events).toEqual(['unhealthy: it answered HTTP 500', 'healthy']);
  // A recent pass lets the next caller straight through, without another request.
  const before = hits();
  await gate.whenHealthy(stop.signal);
  expect(hits()).toBe(before);
});

test('an abort while a check is in flight ends the wait too, not after the interval', { timeout: 5_000 }, async () => {
  const stop = new AbortController();
  // The check is still running when Ctrl-C comes: the abort event fires before any pause listens.
  const checkDuringWhichCtrlCComes = async (): Promise<HealthVerdict> => {
    stop.abort();
    return { healthy: false, reason: 'stopped' };
  };
  const gate = new HealthGate(new URL('http://127.0.0.1:9/health'), 60_000, {}, checkDuringWhichCtrlCComes);
  await expect(gate.whenHealthy(stop.signal)).resolves.toBeUndefined();
});

test('an abort ends the wait (so Ctrl-C is not held up by a failing health check)', async () => {
  const { url } = await endpoint(() => 500);
  const stop = new AbortController();
  const waiting = new HealthGate(url, 60_000).whenHealthy(stop.signal);
  setTimeout(() => stop.abort(), 50);
  await expect(waiting).resolves.toBeUndefined();
});
