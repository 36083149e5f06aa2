/**
 * A webhook written for sqs-webhook-relay, with the webhook kit (in your code:
 * `from 'sqs-webhook-relay-webhook-kit'`; here its source, so a clone runs it unbuilt):
 *   WEBHOOK_SECRET=whsec_… PORT=8080 npx tsx examples/webhook.ts
 * It rejects unsigned or tampered requests with 401, processes each message once (deduplicating
 * on the signed `webhook-id`, so neither a retry nor a replayed request is processed twice), and
 * asks for a later retry (429 + Retry-After, growing with each attempt) while it is "busy".
 */
import { createServer, type Server } from 'node:http';
import { pathToFileURL } from 'node:url';
import { cappedExponential, retryAfter, verifyDelivery } from '../packages/webhook-kit/src/index';

/**
 * Creates the example webhook; `isBusy` decides when to ask for a retry.
 * @param processed the ids of the messages already processed: in production a table with a unique
 *   key, kept at least as long as a message may be retried (the relay's retry window, 24 hours by default)
 * @param handle what is done with each message, once
 */
export function createExampleWebhook(
  secret: string,
  isBusy: () => boolean = () => false,
  processed: Set<string> = new Set(),
  handle: (id: string, body: Buffer) => void = (id, body) => console.log(`message ${id}: ${body.toString('utf8')}`),
): Server {
  return createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      // The signature covers webhook-id, webhook-timestamp and the body: deduplicate on that id,
      // never on X-Carrier-Message-Id, which a replayed request may change.
      const delivery = verifyDelivery(secret, req.headers, body);
      if (delivery === undefined) {
        res.writeHead(401).end('bad signature');
        return;
      }
      if (processed.has(delivery.id)) {
        res.writeHead(204).end(); // done before: a retry whose answer was lost, or a replay
        return;
      }
      if (isBusy()) {
        res.writeHead(429, { 'Retry-After': retryAfter(req.headers, cappedExponential(2, 300, { jitter: true })) }).end();
        return;
      }
      handle(delivery.id, body);
      processed.add(delivery.id);
      res.writeHead(204).end();
    });
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const secret = process.env.WEBHOOK_SECRET;
  if (secret === undefined) throw new Error('set WEBHOOK_SECRET to the relay signing secret (whsec_…)');
  const port = Number(process.env.PORT ?? 8080);
  createExampleWebhook(secret).listen(port, '127.0.0.1', () => console.log(`example webhook on http://127.0.0.1:${port}/`));
}
