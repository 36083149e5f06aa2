/** The deployed function's heap limits, and the machine the figures come from. */
import { execFileSync } from 'node:child_process';
import { cpus, release, totalmem } from 'node:os';
import { PROJECT_ROOT } from '../testkit/synth';
import { CPU_PINNING, SPEED_NODE_FLAGS } from './children';

/** The V8 heap limits Lambda's runtime bootstrap derives from the memory size (shell integer arithmetic): a tenth young, half per semi-space. */
export function lambdaHeapFlags(memorySizeMb: number): string[] {
  const youngMb = Math.floor(memorySizeMb / 10);
  return [`--max-semi-space-size=${Math.floor(youngMb / 2)}`, `--max-old-space-size=${memorySizeMb - youngMb}`];
}

/** The machine the figures come from. */
export interface MachineInfo {
  readonly cpu: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly kernel: string;
  readonly node: string;
  readonly date: string;
  readonly commit: string;
  /** Where the children ran (CPU pinning). */
  readonly placement?: string;
}

/** @param node the Node.js binary the children run on */
export function machineInfo(node: string = process.execPath): MachineInfo {
  const git = (...args: string[]): string => execFileSync('git', args, { cwd: PROJECT_ROOT, encoding: 'utf8' }).trim();
  let commit = 'unknown'; // not a git checkout
  try {
    const dirty = git('status', '--porcelain', '--', 'lambda', 'lib', 'bin', 'package.json') !== '';
    commit = `${git('rev-parse', '--short', 'HEAD')}${dirty ? ' + uncommitted changes' : ''}`;
  } catch {}
  return {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    kernel: release(),
    node: node === process.execPath ? process.version : execFileSync(node, ['-p', 'process.version'], { encoding: 'utf8' }).trim(),
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    commit,
    placement:
      CPU_PINNING === undefined
        ? 'wherever the scheduler put them (no taskset, or one CPU)'
        : `each client held to CPU ${CPU_PINNING.client} (with ${SPEED_NODE_FLAGS.join(' ')}), the webhook to CPU ${CPU_PINNING.webhook} (taskset)`,
  };
}
