/**
 * How a command this program prints is typed where it is printed. In a clone of the repository
 * the code runs from its TypeScript source (`npm start`, `npm run send`); installed from the
 * package it runs from the build in `dist/`, where `bin/` and `tsx` do not exist but the
 * `sqs-webhook-relay` bin does (`npx` finds it in the project that installed it, or a global install).
 */

/** The command's name, as `npx` and the Docker image run it. */
export const COMMAND = 'sqs-webhook-relay';

/** The subcommands of {@link COMMAND}, each also an npm script of the repository. */
export type Subcommand = 'send' | 'dead-letters';

/** True when this module runs from the repository's TypeScript source rather than the package's build. */
export function runsFromSource(moduleUrl: string = import.meta.url): boolean {
  return moduleUrl.endsWith('.ts');
}

/**
 * The words that run `subcommand` here, its arguments to follow: `npm run send --` in a clone,
 * `npx sqs-webhook-relay send` where the package is installed.
 */
export function subcommandPrefix(subcommand: Subcommand, fromSource: boolean = runsFromSource()): string {
  return fromSource ? `npm run ${subcommand} --` : `npx ${COMMAND} ${subcommand}`;
}
