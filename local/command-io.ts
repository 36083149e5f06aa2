/**
 * What a subcommand of `sqs-webhook-relay` (`send`, `dead-letters`) reads and writes: its own
 * streams and environment, passed in, so tests run it in-process as the installed bin does; and
 * its command line, and its options' numbers, read as the settings' are.
 */
import type { Readable } from 'node:stream';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import type { Env } from '../lambda/env';
import { nearestName, TYPO_DISTANCE } from '../lambda/nearest-name';
import { Refusal, wholeNumber } from '../lambda/setting-kinds';
import { UsageError } from './errors';
import { type Subcommand, subcommandPrefix } from './invocation';
import type { TextOutput } from './log';

/** A subcommand's surroundings. */
export interface CommandIo {
  /** Results: the summary, the tally, `--json`. */
  readonly out: TextOutput;
  /** Progress and errors. */
  readonly err: TextOutput;
  /** The environment (`process.env`): QUEUE_URL, AWS_REGION, AWS_PROFILE, … */
  readonly env: Env;
  /** Standard input, for `send` without a BODY. */
  readonly stdin?: Readable & { readonly isTTY?: boolean };
  /** Whether `err` is a terminal: progress is drawn there only. */
  readonly errIsTerminal: boolean;
  /** Aborted on SIGINT/SIGTERM: the command stops what it started and reports. */
  readonly signal?: AbortSignal;
}

/** The exit status of a subcommand: 0 done, 1 failed (or some of its work did), 2 a usage error, 130 interrupted. */
export type ExitStatus = 0 | 1 | 2 | 130;

/**
 * A whole-number option (`--count 25`) within bounds, or `undefined` when not given.
 * @throws {UsageError} naming the option
 */
export function optionNumber(value: string | undefined, option: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const number = wholeNumber(value, min, max);
  if (number instanceof Refusal) throw new UsageError(`${option} must be ${number.expected}; got ${value}`);
  return number;
}

/**
 * node:util's `parseArgs` for a subcommand's command line; an unknown option is refused in one
 * line naming the option nearest to it (`--coutn`: did you mean --count?) and where the help is.
 * @throws {UsageError} for an unknown option; parseArgs' own error for any other bad command line
 */
export function parseCommandLine<T extends ParseArgsConfig>(subcommand: Subcommand, config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'ERR_PARSE_ARGS_UNKNOWN_OPTION') throw error;
    // The loose parse takes what the strict one refused, and says which option that was.
    const known = Object.keys(config.options ?? {});
    const { tokens = [] } = parseArgs({ ...config, strict: false, allowPositionals: true, tokens: true });
    const unknown = tokens.find((token) => token.kind === 'option' && !known.includes(token.name));
    if (unknown?.kind !== 'option') throw error;
    const meant = unknown.rawName.startsWith('--') ? nearestName(unknown.name, known, TYPO_DISTANCE) : undefined;
    const hint = meant === undefined ? '' : `; did you mean --${meant}?`;
    throw new UsageError(`unknown option ${unknown.rawName}${hint} (${subcommandPrefix(subcommand)} --help)`);
  }
}
