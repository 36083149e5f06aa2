import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeMajor, OLDEST_SUPPORTED_NODE } from '../../bin/node-release';
import { PROJECT_ROOT } from '../../testkit/synth';

describe('nodeMajor', () => {
  it('reads the major from a version with or without its v', () => {
    expect(nodeMajor('v24.9.0')).toBe('24');
    expect(nodeMajor('22.12.0')).toBe('22');
  });

  it('gives back what is not a version, rather than a wrong major', () => {
    expect(nodeMajor('nightly')).toBe('nightly');
  });
});

describe('OLDEST_SUPPORTED_NODE', () => {
  it("is the floor package.json's engines states, so that npm test runs on the oldest Node.js a user may have", () => {
    const manifest = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
    expect(manifest.engines.node).toBe(`>=${nodeMajor(OLDEST_SUPPORTED_NODE)}`);
  });
});
