/**
 * The client certificate's dates (client-certificate.ts, tls-material.ts): one that has expired,
 * is not valid yet, or expires within 14 days is still presented, with one WARN naming its dates
 * when it is read (the first connection, a rotation), never one per connection, never its text.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, inject, test } from 'vitest';
import { ClientCertificate } from '../../lambda/client-certificate';
import { validityWarning } from '../../lambda/tls-material';
import { createCa, type IssuedCertificate } from '../../testkit/certificates';
import { capturedTelemetry } from '../support/relay';

const ca = createCa();
const dir = mkdtempSync(join(inject('scratchDir'), 'client-certificate-'));
const DAY_MS = 86_400_000;

/** A {@link ClientCertificate} reading `certificate` from files (re-read at every use when `refreshSeconds` is 0). */
function fromFiles(certificate: IssuedCertificate, name: string, refreshSeconds = 300) {
  const files = { certificate: join(dir, `${name}.crt`), privateKey: join(dir, `${name}.key`) };
  const write = (issued: IssuedCertificate): void => {
    writeFileSync(files.certificate, issued.certificate);
    writeFileSync(files.privateKey, issued.privateKey);
  };
  write(certificate);
  const telemetry = capturedTelemetry();
  const client = new ClientCertificate({ sources: [{ kind: 'files', files }] }, { logger: telemetry.logger, refreshSeconds });
  return { client, telemetry, write };
}

const warnings = (telemetry: ReturnType<typeof capturedTelemetry>) => telemetry.lines.filter((line) => line.level === 'WARN');

describe('a client certificate out of its dates', () => {
  test('expired: presented all the same, one WARN naming when it expired and where it comes from, however many connections', async () => {
    const { client, telemetry } = fromFiles(
      ca.client('expired', { validFrom: new Date(Date.now() - 40 * DAY_MS), validDays: 30 }),
      'expired',
    );
    for (let i = 0; i < 5; i += 1) await client.secureContext();
    expect(warnings(telemetry)).toEqual([
      expect.objectContaining({
        message: expect.stringMatching(/^The client certificate expired on \d{4}-\d\d-\d\dT[\d:.]+Z; it is still presented/),
        notAfter: expect.any(String),
        from: 'CLIENT_CERTIFICATE_FILE',
      }),
    ]);
    const notAfter = Date.parse(warnings(telemetry)[0]?.notAfter as string);
    expect(Math.abs(notAfter - (Date.now() - 10 * DAY_MS))).toBeLessThan(DAY_MS);
    for (const line of telemetry.lines) expect(JSON.stringify(line)).not.toMatch(/BEGIN|PRIVATE KEY/);
  });

  test('not valid yet: one WARN naming when it starts to be', async () => {
    const { client, telemetry } = fromFiles(ca.client('early', { validFrom: new Date(Date.now() + 2 * DAY_MS) }), 'early');
    await client.secureContext();
    await client.secureContext();
    expect(warnings(telemetry)).toEqual([
      expect.objectContaining({ message: expect.stringMatching(/^The client certificate is not valid before \d{4}-/) }),
    ]);
  });

  test('within 14 days of its expiry: one WARN with the days left; further off, none', async () => {
    const soon = fromFiles(ca.client('soon', { validDays: 5 }), 'soon');
    await soon.client.secureContext();
    expect(warnings(soon.telemetry)).toEqual([
      expect.objectContaining({ message: expect.stringMatching(/^The client certificate expires on \d{4}-.*Z, in 5 days: renew it$/) }),
    ]);
    const later = fromFiles(ca.client('later', { validDays: 30 }), 'later');
    await later.client.secureContext();
    expect(warnings(later.telemetry)).toEqual([]);
  });

  test('read from Secrets Manager: the same WARN, naming the secret as where it comes from', async () => {
    const expired = ca.client('expired-secret', { validFrom: new Date(Date.now() - 3 * DAY_MS), validDays: 1 });
    const telemetry = capturedTelemetry();
    const client = new ClientCertificate(
      { sources: [{ kind: 'secrets-manager', secretId: 'relay-certificate' }] },
      { logger: telemetry.logger, refreshSeconds: 300, fetch: async () => JSON.stringify(expired) },
    );
    await client.secureContext();
    expect(warnings(telemetry)).toEqual([
      expect.objectContaining({
        message: expect.stringMatching(/^The client certificate expired on /),
        from: 'CLIENT_CERTIFICATE_SECRET_ARN',
      }),
    ]);
  });

  test('rotated to an expired one: the new value is checked when it is read', async () => {
    const { client, telemetry, write } = fromFiles(ca.client('fine'), 'rotated', 0);
    await client.secureContext();
    expect(warnings(telemetry)).toEqual([]);
    write(ca.client('stale', { validFrom: new Date(Date.now() - 3 * DAY_MS), validDays: 1 }));
    await client.secureContext();
    await client.secureContext();
    expect(warnings(telemetry)).toEqual([
      expect.objectContaining({ message: expect.stringMatching(/^The client certificate expired on /) }),
    ]);
  });
});

describe('validityWarning', () => {
  const notBefore = new Date('2030-01-01T00:00:00Z');
  const notAfter = new Date('2030-03-01T00:00:00Z');
  test.each([
    ['2029-12-31T23:59:59Z', /not valid before 2030-01-01T00:00:00.000Z/],
    ['2030-01-10T00:00:00Z', undefined],
    ['2030-02-14T00:00:01Z', undefined],
    ['2030-02-15T00:00:00Z', /expires on 2030-03-01T00:00:00.000Z, in 14 days/],
    ['2030-02-28T12:00:00Z', /in 1 day: renew it$/],
    ['2030-03-01T00:00:01Z', /expired on 2030-03-01T00:00:00.000Z/],
  ] as const)('at %s: %s', (now, expected) => {
    const warning = validityWarning({ notBefore, notAfter }, Date.parse(now));
    if (expected === undefined) expect(warning).toBeUndefined();
    else expect(warning).toMatch(expected);
  });
});
