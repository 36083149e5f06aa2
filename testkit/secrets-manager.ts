/**
 * A stand-in for AWS Secrets Manager that speaks its wire protocol (AWS JSON 1.1,
 * `secretsmanager.GetSecretValue`) on 127.0.0.1, so the relay's real SDK client and
 * Powertools Parameters are exercised end to end via `AWS_ENDPOINT_URL_SECRETS_MANAGER`.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeSecretsManager {
  readonly endpoint: string;
  /** Secret values by id (name or ARN); change one to simulate a rotation. */
  readonly secrets: Map<string, string>;
  /** GetSecretValue calls answered so far. */
  readonly calls: { count: number };
  /** While true every call fails with a 500. */
  failing: boolean;
  /** Milliseconds every answer waits before it is sent (a slow Secrets Manager). */
  delayMs: number;
  close(): Promise<void>;
}

/** Starts the stand-in and points `AWS_ENDPOINT_URL_SECRETS_MANAGER` at it. */
export async function startSecretsManager(): Promise<FakeSecretsManager> {
  const state = { secrets: new Map<string, string>(), calls: { count: 0 }, failing: false };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const reply = (status: number, body: unknown): void => {
        const send = (): void => {
          res.writeHead(status, { 'Content-Type': 'application/x-amz-json-1.1' });
          res.end(JSON.stringify(body));
        };
        if (fake.delayMs > 0) setTimeout(send, fake.delayMs);
        else send();
      };
      if (req.headers['x-amz-target'] !== 'secretsmanager.GetSecretValue') return reply(400, { __type: 'UnknownOperationException' });
      state.calls.count += 1;
      if (fake.failing) return reply(500, { __type: 'InternalServiceError', message: 'test outage' });
      const { SecretId } = JSON.parse(Buffer.concat(chunks).toString()) as { SecretId: string };
      const value = state.secrets.get(SecretId);
      if (value === undefined) return reply(400, { __type: 'ResourceNotFoundException', message: 'no such secret' });
      return reply(200, { ARN: SecretId, Name: SecretId, SecretString: value, VersionId: 'v1', CreatedDate: Date.now() / 1000 });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}`;
  process.env.AWS_ENDPOINT_URL_SECRETS_MANAGER = endpoint;
  const fake: FakeSecretsManager = {
    endpoint,
    secrets: state.secrets,
    calls: state.calls,
    failing: false,
    delayMs: 0,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return fake;
}
