/**
 * The daemon's command line (`sqs-webhook-relay`, `npm start`): `--help`, `--version`, and a
 * one-line refusal of anything else. Everything the relay reads is an environment variable; the
 * help lists them from the code that reads them (`lambda/config.ts`, `local/settings.ts`), with
 * the default and meaning from docs/configuration.md when that file is at hand (the package ships it).
 */
import { readFileSync } from 'node:fs';
import { version } from '../package.json';
import { loadConfig } from '../lambda/config';
import type { Env } from '../lambda/env';
import { loadLocalSettings } from './settings';

/** The command's name, as `npx` and the Docker image run it. */
export const COMMAND = 'sqs-webhook-relay';

/** A variable as the help shows it. */
export interface VariableHelp {
  readonly name: string;
  /** From docs/configuration.md; undefined when the docs are not at hand or have no row. */
  readonly defaultValue?: string;
  readonly meaning?: string;
}

/** The names a loader reads, in the order it reads them: it is run on an environment that records every lookup. */
function namesRead(load: (env: Env) => unknown, given: Readonly<Record<string, string>> = {}): string[] {
  const names = new Set<string>();
  const env = new Proxy({} as Env, {
    get(_target, key) {
      if (typeof key !== 'string') return undefined;
      names.add(key);
      return given[key];
    },
  });
  load(env);
  return [...names];
}

/** The variables of the function (read by `loadConfig`) and of the daemon itself (read by `loadLocalSettings`). */
export function variablesRead(): { readonly function: string[]; readonly daemon: string[] } {
  // A valid webhook URL lets loadConfig read on past its only required variable.
  const fn = namesRead(loadConfig, { WEBHOOK_URL: 'https://example.invalid/' });
  const daemon = namesRead((env) => loadLocalSettings(env, false)).filter((name) => !fn.includes(name));
  return { function: fn, daemon };
}

/** Strips the Markdown a terminal would show literally: code spans, links, emphasis. */
function plain(markdown: string): string {
  return markdown
    .replace(/\[([^\]]+)\]\([^)]*\)/g, '$1')
    .replace(/`([^`]*)`/g, '$1')
    .replace(/\*\*([^*]+)\*\*/g, '$1')
    .trim();
}

/**
 * Up to the first `;` or `.` outside parentheses, or a `:` after a phrase long enough to stand
 * alone ("set: no colours" keeps its colon): what fits a terminal line (the docs have the rest).
 */
function firstClause(text: string, colon = true): string {
  let depth = 0;
  for (let i = 0; i < text.length; i += 1) {
    const char = text[i];
    if (char === '(') depth += 1;
    else if (char === ')') depth = Math.max(0, depth - 1);
    else if (depth === 0 && (char === ';' || char === '.' || (colon && char === ':' && i >= 20)) && (text[i + 1] === ' ' || i + 1 === text.length)) return text.slice(0, i);
  }
  return text;
}

/** Rows of docs/configuration.md's variable tables (`| \`NAME\` | context key | default | meaning |`). */
export function documentedVariables(markdown: string): Map<string, { defaultValue: string; meaning: string }> {
  const rows = new Map<string, { defaultValue: string; meaning: string }>();
  for (const line of markdown.split('\n')) {
    const cells = line.split(' | ');
    const name = /^\| `([A-Z][A-Z0-9_]*)`$/.exec(cells[0] ?? '')?.[1];
    if (name === undefined || cells.length < 4) continue;
    const meaning = plain(cells.slice(3).join(' | ').replace(/ \|$/, ''));
    rows.set(name, { defaultValue: firstClause(plain(cells[2] ?? ''), false), meaning: firstClause(meaning) });
  }
  return rows;
}

function readDocs(): string | undefined {
  // Beside local/ in this repository, beside dist/ in the package: ../docs from either.
  try {
    return readFileSync(new URL('../docs/configuration.md', import.meta.url), 'utf8');
  } catch {
    return undefined;
  }
}

/** The `--help` text. */
export function helpText(docs: string | undefined = readDocs()): string {
  const documented = docs === undefined ? new Map<string, { defaultValue: string; meaning: string }>() : documentedVariables(docs);
  const read = variablesRead();
  // In the docs' order, which groups related variables; any the docs lack come last.
  const order = [...documented.keys()];
  const rank = (name: string): number => (order.includes(name) ? order.indexOf(name) : order.length);
  const sorted = (names: readonly string[]): string[] => [...names].sort((a, b) => rank(a) - rank(b));
  const fn = sorted(read.function);
  const daemon = sorted(read.daemon);
  // Documented variables read elsewhere: by Powertools, the AWS SDK, the terminal output.
  const others = order.filter((name) => !fn.includes(name) && !daemon.includes(name));
  const describe = (name: string): string => {
    const row = documented.get(name);
    if (row === undefined) return `  ${name}`;
    const fallback = row.defaultValue === '' || row.defaultValue === 'none' ? '' : ` (default: ${row.defaultValue})`;
    return `  ${name.padEnd(30)} ${row.meaning}${fallback}`;
  };
  return [
    `${COMMAND} ${version}: relays every message of an SQS queue to an HTTP webhook, as the`,
    `relay's Lambda function does, from this process (a daemon beside a worker).`,
    '',
    `Usage: ${COMMAND} [--help | --version]`,
    '',
    'Configured by environment variables only. With QUEUE_URL it relays from that existing queue',
    '(credentials and region: the AWS SDK\'s usual chain, e.g. AWS_REGION, AWS_PROFILE); without it,',
    'it starts a sandbox: an SQS emulator in this process (needs the optional package fauxqs).',
    'SIGTERM or SIGINT stops polling, lets the batches in flight finish, and exits 0.',
    '',
    'The relay (the same variables as the Lambda function):',
    ...fn.map(describe),
    '',
    'The daemon (its queue and polling):',
    ...daemon.map(describe),
    '',
    ...(others.length === 0 ? [] : ['Also read (by Powertools, the AWS SDK, the output):', ...others.map(describe), '']),
    'Every variable, its default and why: docs/configuration.md (in the package: node_modules/sqs-webhook-relay/docs/).',
    '',
  ].join('\n');
}

/**
 * Acts on the command line before the relay starts: prints help or the version and exits 0,
 * refuses an unknown argument with one line and exits 2, and otherwise returns.
 */
export function handleCommandLine(args: readonly string[], out: NodeJS.WritableStream = process.stdout): void {
  const [first] = args;
  if (first === undefined) return;
  if (first === '--help' || first === '-h') {
    out.write(helpText());
    process.exit(0);
  }
  if (first === '--version' || first === '-v') {
    out.write(`${version}\n`);
    process.exit(0);
  }
  process.stderr.write(`${COMMAND}: unknown argument ${JSON.stringify(first)}; it takes only --help or --version (settings are environment variables)\n`);
  process.exit(2);
}

/**
 * Refuses to start the sandbox when its emulator is not installed: the published package lists
 * fauxqs as an optional peer, so a production install (a Docker image) relays from `QUEUE_URL` only.
 */
export function checkSandboxAvailable(env: Env = process.env): void {
  if (env.QUEUE_URL !== undefined && env.QUEUE_URL.trim() !== '') return;
  try {
    import.meta.resolve('fauxqs');
  } catch {
    process.stderr.write(`${COMMAND}: QUEUE_URL is not set, and the sandbox's SQS emulator is not installed: set QUEUE_URL to your queue, or npm install fauxqs for the sandbox\n`);
    process.exit(1);
  }
}
