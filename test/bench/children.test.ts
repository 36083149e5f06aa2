/**
 * The bench's client processes as the orchestrator meets them: a start that fails answers with its error, and a call to a
 * client stuck on a webhook that accepts and never answers is given up on at its timeout, the child killed.
 */
import { writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompiledChildren, compileChildren, SCRATCH_DIR, startClientProcess } from '../../bench/children';
import type { ClientKind } from '../../bench/protocol';
import { eventJson } from '../../bench/records';

let compiled: CompiledChildren;
let silent: Server;
const sockets: Socket[] = [];
let silentUrl: string;

beforeAll(async () => {
  compiled = await compileChildren();
  silent = createServer((socket) => sockets.push(socket)); // accepts, reads nothing, answers nothing
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const address = silent.address();
  silentUrl = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}/hook`;
}, 60_000);

afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => silent.close(resolve));
});

const env = (): NodeJS.ProcessEnv => ({ PATH: process.env.PATH, WEBHOOK_URL: silentUrl, MAX_CONCURRENCY: '2' });

describe('bench client processes', () => {
  it('an unknown kind is the start’s answer, with its error, not a bare exit', async () => {
    const start = startClientProcess(compiled, { kind: 'bogus' as ClientKind, env: env(), pinned: false });
    await expect(start).rejects.toThrow(/unknown BENCH_KIND bogus/);
  });

  it('a run stuck on a webhook that never answers rejects at its timeout and the child is gone', async () => {
    const client = await startClientProcess(compiled, { kind: 'bare-http', env: env(), pinned: false });
    const eventFile = join(SCRATCH_DIR, 'children-test-event.json');
    writeFileSync(eventFile, eventJson(2));
    await expect(client.run({ eventFile, timeoutMs: 60_000 }, 500)).rejects.toThrow(/no answer to run within 500 ms/);
    expect(() => process.kill(client.pid, 0)).toThrow(); // no such process
    await client.stop();
  }, 30_000);
});
