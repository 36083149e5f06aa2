/**
 * What `npm start` prints. On a terminal, short lines a person reads at a glance
 * ("✓ delivered", "↻ retry in 5 s", "✗ dead-lettered"); otherwise (a pipe, a container's log
 * driver) one JSON object per line, the handler's exactly as Powertools writes them in Lambda.
 * The handler's Powertools Logger is a {@link RelayLogger}, so its lines take the same road.
 */
import { Logger, LogLevelThreshold, type LogItem } from '@aws-lambda-powertools/logger';
import type { ConstructorOptions } from '@aws-lambda-powertools/logger/types';
import { durationText } from '../lambda/duration-text';
import type { LogFormat } from './settings';

/** Levels of the runner's own lines. */
export type Level = 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';

/** Where text goes (standard output, or a buffer in tests). */
export interface TextOutput {
  write(text: string): unknown;
}

/** The runner's log: its own lines and a renderer for the handler's. */
export interface LocalLog {
  readonly format: LogFormat;
  /** The styles of pretty lines (none in JSON mode or off a terminal). */
  readonly styles: Styles;
  /** A line of the runner; `pretty` replaces the default rendering on a terminal. */
  line(level: Level, message: string, fields?: Record<string, unknown>, pretty?: string): void;
  /** Text printed as is, in pretty mode only (the banner, the demo webhook's requests). */
  text(text: string): void;
  /** One of the handler's log entries, already filtered by its Logger's level (pretty mode). */
  handlerEntry(level: Level, attributes: Record<string, unknown>): void;
  /** A JSON line written as is (JSON mode). */
  json(line: string): void;
  /** Whether lines at `level` are written. */
  enabled(level: Level): boolean;
}

const LEVEL_ORDER: Record<string, number> = { TRACE: 6, DEBUG: 8, INFO: 12, WARN: 16, ERROR: 20, CRITICAL: 24, SILENT: 28 };

/** ANSI styles, or none (not a terminal, or NO_COLOR set). */
export interface Styles {
  readonly green: (text: string) => string;
  readonly yellow: (text: string) => string;
  readonly red: (text: string) => string;
  readonly dim: (text: string) => string;
  readonly bold: (text: string) => string;
}

const style = (open: number, close: number) => (text: string) => `\u001b[${open}m${text}\u001b[${close}m`;
/** Styles for a terminal. */
export const COLOR: Styles = { green: style(32, 39), yellow: style(33, 39), red: style(31, 39), dim: style(2, 22), bold: style(1, 22) };
/** No styling. */
export const PLAIN: Styles = { green: String, yellow: String, red: String, dim: String, bold: String };

/**
 * Terminal control sequences: CSI (`ESC [` or 8-bit `0x9B` … final byte), the string commands
 * (OSC, DCS, SOS, PM, APC: `ESC ]`, `ESC P`, … or their 8-bit forms, up to BEL or ST), and the
 * other two-character escapes (`ESC c` resets the terminal, `ESC 7` saves the cursor…).
 */
const TERMINAL_SEQUENCE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is what it is for
  /\u001b\[[0-?]*[ -/]*[@-~]|\u009b[0-?]*[ -/]*[@-~]|(?:\u001b[\]PX^_]|[\u0090\u0098\u009d\u009e\u009f])[^\u0007\u001b\u009c]*(?:\u0007|\u001b\\|\u009c)|\u001b[ -/]*[0-~]/g;
/**
 * Control characters: C0 (tab and line feed aside), DEL and C1; and Unicode's bidirectional
 * embeddings, overrides and isolates, which reorder what follows them on the line (a status or id
 * printed after a producer's text could read backwards, as in "Trojan Source").
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is what it is for
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
/** Any character {@link terminalSafe} may have to change: a quick test keeps plain text as it is. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is what it is for
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

/**
 * `text` as it may be printed to a terminal: escape sequences and control characters removed
 * (C0, DEL, C1, `\r` included), so that text from outside (a message body, a header, a producer's
 * attribute, a webhook's answer) cannot move the cursor, rewrite a line, retitle the window or
 * hide what was printed. A line feed and a tab are kept when the layout has room for them
 * (`multiline`), else each becomes a space: one entry stays one line.
 */
export function terminalSafe(text: string, { multiline = false }: { multiline?: boolean } = {}): string {
  if (!UNSAFE.test(text)) return text;
  const withoutSequences = text.replace(TERMINAL_SEQUENCE, '').replace(CONTROL, '');
  return multiline ? withoutSequences : withoutSequences.replace(/[\t\n]/g, ' ');
}

function clock(date = new Date()): string {
  return date.toTimeString().slice(0, 8);
}

/** A value as it reads in a `key=value` list, safe for a terminal (values may come from producers). */
function show(value: unknown): string {
  if (value instanceof Error) return terminalSafe(`${value.name}: ${value.message}`);
  // JSON escapes line feeds and tabs visibly; what it leaves (C1, escape sequences' text) goes.
  if (typeof value === 'string') return terminalSafe(/[\s"=]/.test(value) || value === '' ? JSON.stringify(value) : value);
  return terminalSafe(JSON.stringify(value) ?? String(value));
}

// Keys every Powertools line carries; on a terminal they are noise.
const BOILERPLATE = new Set([
  'level',
  'message',
  'timestamp',
  'service',
  'cold_start',
  'function_arn',
  'function_memory_size',
  'function_name',
  'function_request_id',
  'sampling_rate',
  'xray_trace_id',
  'lambda_request_id',
]);

function extras(attributes: Record<string, unknown>, skip: readonly string[] = []): string {
  return Object.entries(attributes)
    .filter(([key, value]) => !BOILERPLATE.has(key) && !skip.includes(key) && value !== undefined)
    .map(([key, value]) => `${key}=${show(value)}`)
    .join(' ');
}

/**
 * One handler log entry as a terminal line, or `undefined` to leave it out. The relay's
 * per-record lines (docs/operations.md, "Logs and metrics": message id, outcome, status, the
 * visibility given, receive count) become "↻ retry in 5 s" / "✗ dead-lettered"; its batch
 * summary shows at DEBUG only, since the runner prints a line per delivered message; anything
 * else is shown generically.
 */
export function renderHandlerEntry(
  level: Level,
  attributes: Record<string, unknown>,
  styles: Styles,
  showSummaries: boolean,
): string | undefined {
  const { outcome, receiveCount, status, visibilitySeconds, error, reason, response } = attributes;
  // Text from outside (a producer's ids, a webhook's answer, errors quoting either): made safe for a terminal.
  const message = terminalSafe(String(attributes.message));
  const messageId = terminalSafe(String(attributes.messageId));
  const tail = (parts: (string | undefined)[]): string => parts.filter((part) => part !== undefined && part !== '').join(' · ');
  // 0 is the relay's "no HTTP answer" (a timeout, a refused connection), not a status a webhook sent.
  const http = typeof status !== 'number' ? undefined : status === 0 ? 'no answer' : `HTTP ${status}`;
  const receive = typeof receiveCount === 'number' ? `receive ${receiveCount}` : undefined;
  if (outcome === 'retry' || outcome === 'not-attempted') {
    // The visibility the record was handed back with, not the delay asked for (delaySeconds):
    // the retry window's spacing, the breaker's hold or SQS's limits may have changed it.
    const given = typeof visibilitySeconds === 'number' ? visibilitySeconds : undefined;
    const after = given === undefined ? undefined : given < 60 ? `${given} s` : durationText(given);
    const back = outcome === 'not-attempted' ? 'not sent, back' : 'retry';
    const when = after === undefined ? `${back} after the visibility timeout` : given === 0 ? `${back} at once` : `${back} in ${after}`;
    const last =
      level !== 'WARN'
        ? undefined
        : styles.yellow(
            message.includes('retry window')
              ? 'next attempt is the last in its retry window'
              : 'last receive: SQS moves it to the DLQ next',
          );
    const cause = typeof error === 'string' ? error : typeof reason === 'string' ? reason : undefined;
    return `${styles.yellow(`↻ ${when}`)}  ${messageId}  ${tail([receive, http, cause === undefined ? undefined : terminalSafe(cause), last])}`;
  }
  if (outcome === 'dead-lettered') {
    const text = typeof response === 'string' ? response.trim() : '';
    const excerpt = text === '' ? undefined : terminalSafe(JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text));
    return `${styles.red('✗ dead-lettered')}  ${messageId}  ${tail([receive, http, excerpt])}`;
  }
  if (message === 'Batch relayed' && !showSummaries) return undefined;
  const label = level === 'ERROR' ? styles.red('ERROR') : level === 'WARN' ? styles.yellow('WARN') : styles.dim(level);
  return `${label} ${message} ${styles.dim(extras(attributes))}`.trimEnd();
}

/** Creates the log for a format and level, writing to `out`. */
export function createLocalLog(format: LogFormat, logLevel: string, out: TextOutput, styles: Styles = PLAIN): LocalLog {
  const threshold = LEVEL_ORDER[logLevel] ?? LEVEL_ORDER.INFO ?? 12;
  const enabled = (level: Level): boolean => (LEVEL_ORDER[level] ?? 0) >= threshold;
  const pretty = (text: string): void => {
    out.write(`${styles.dim(clock())} ${text}\n`);
  };
  return {
    format,
    styles,
    enabled,
    line(level, message, fields = {}, prettyText) {
      if (!enabled(level)) return;
      if (format === 'json') {
        out.write(
          `${JSON.stringify({ timestamp: new Date().toISOString(), level, service: 'local-runner', message, ...fields }, (_, value: unknown) => (value instanceof Error ? value.message : value))}\n`,
        );
        return;
      }
      if (prettyText !== undefined) {
        pretty(prettyText);
        return;
      }
      const label =
        level === 'ERROR'
          ? styles.red('ERROR ')
          : level === 'WARN'
            ? styles.yellow('WARN ')
            : level === 'DEBUG'
              ? styles.dim('DEBUG ')
              : '';
      const rest = extras(fields);
      pretty(`${label}${message}${rest === '' ? '' : ` ${styles.dim(rest)}`}`);
    },
    text(text) {
      if (format === 'pretty') out.write(text.endsWith('\n') ? text : `${text}\n`);
    },
    json(line) {
      out.write(`${line}\n`);
    },
    handlerEntry(level, attributes) {
      if (format === 'json') {
        out.write(`${JSON.stringify(attributes)}\n`);
        return;
      }
      const rendered = renderHandlerEntry(level, attributes, styles, enabled('DEBUG'));
      if (rendered !== undefined) pretty(rendered);
    },
  };
}

function levelName(threshold: number): Level {
  if (threshold >= LogLevelThreshold.ERROR) return 'ERROR';
  if (threshold >= LogLevelThreshold.WARN) return 'WARN';
  if (threshold >= LogLevelThreshold.INFO) return 'INFO';
  return 'DEBUG';
}

/**
 * A Powertools Logger for the handler whose lines go to a {@link LocalLog}: JSON as Powertools
 * writes it, or a readable line on a terminal. `observe` sees every entry (the runner learns from
 * it which acknowledged records were dead-lettered rather than delivered).
 */
export class RelayLogger extends Logger {
  private readonly local: LocalLog | undefined;
  private readonly observe: ((attributes: Record<string, unknown>) => void) | undefined;

  constructor(options: ConstructorOptions, local: LocalLog, observe?: (attributes: Record<string, unknown>) => void) {
    super(options);
    this.local = local;
    this.observe = observe;
  }

  protected override printLog(logLevel: number, log: LogItem): void {
    // Powertools may log from its own constructor, before this subclass's fields are set.
    if (this.local === undefined) {
      super.printLog(logLevel, log);
      return;
    }
    log.prepareForPrint();
    const attributes = log.getAttributes() as Record<string, unknown>;
    this.observe?.(attributes);
    if (this.local.format === 'json') {
      // Powertools' own serialisation (its replacer formats errors and drops cycles), as in Lambda.
      this.local.json(JSON.stringify(attributes, this.getJsonReplacer()));
      return;
    }
    this.local.handlerEntry(levelName(logLevel), attributes);
  }

  protected override createLogger(options?: ConstructorOptions): Logger {
    return new RelayLogger(options ?? {}, this.local as LocalLog, this.observe);
  }
}
