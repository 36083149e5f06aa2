/**
 * A webhook written for sqs-webhook-relay, with the receiver kit:
 *   WEBHOOK_SECRET=whsec_… PORT=8080 npx tsx examples/webhook.ts
 * It rejects unsigned or tampered requests with 401, and asks for a later retry (429 +
 * Retry-After, growing with each attempt) while it is "busy".
 */
import { createServer, type Server } from 'node:http';
import { pathToFileURL } from 'node:url';
import { cappedExponential, retryAfter, verifySignature } from '../receiver/index';

/** Creates the example webhook; `isBusy` decides when to ask for a retry. */
export function createExampleWebhook(secret: string, isBusy: () => boolean = () => false): Server {
  return createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (!verifySignature(secret, req.headers, body)) {
        res.writeHead(401).end('bad signature');
        return;
      }
      if (isBusy()) {
        res.writeHead(429, { 'Retry-After': retryAfter(req.headers, cappedExponential(2, 300, { jitter: true })) }).end();
        return;
      }
      const id = req.headers['x-carrier-message-id']; // the idempotency key: delivery is at-least-once
      console.log(`message ${String(id)}: ${body.toString('utf8')}`);
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
