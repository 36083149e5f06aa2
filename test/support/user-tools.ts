/**
 * The tools a package's user runs, as the package tests run them: the environment of a user's
 * shell, `npm publish --dry-run` read for what a release would print and ship, and `tsc` over a
 * user's TypeScript app.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);

/** The environment of a user's shell: none of the `npm_*` variables `npm test` sets for its children. */
export function userEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('npm_')));
  return { ...base, NO_UPDATE_NOTIFIER: '1', ...extra };
}

/**
 * `npm publish --dry-run` in the repository (`args` may name a workspace: `-w packages/…`), on the
 * build already made: the paths each package would ship, by package name, and npm's warnings
 * (all but "requires you to be logged in", which a machine without an npm login always gets).
 */
export async function publishDryRun(args: readonly string[] = []): Promise<{ files: Record<string, string[]>; warnings: string[] }> {
  const { stdout, stderr } = await run('npm', ['publish', ...args, '--dry-run', '--json', '--ignore-scripts'], {
    cwd: ROOT,
    env: userEnv(),
    timeout: 60_000,
    maxBuffer: 16 << 20,
  });
  const report = JSON.parse(stdout) as Record<string, { files: { path: string }[] }>;
  return {
    files: Object.fromEntries(Object.entries(report).map(([name, { files }]) => [name, files.map((file) => file.path)])),
    warnings: stderr.split('\n').filter((line) => line.startsWith('npm warn') && !/requires you to be logged in/.test(line)),
  };
}

/**
 * Type-checks the app in `dir` (its `files`, already written) with the repository's `tsc`, as a
 * user's app resolving the package under `moduleResolution: NodeNext`, strict, with
 * `compilerOptions` on top: tsc's report, `''` when clean.
 */
export async function typecheckApp(
  dir: string,
  compilerOptions: Record<string, unknown>,
  files: readonly string[],
  timeoutMs = 60_000,
): Promise<string> {
  const options = { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, ...compilerOptions };
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: options, files }));
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const result = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: dir, env: userEnv(), timeout: timeoutMs }).catch(
    (error: { stdout: string }) => error,
  );
  return result.stdout;
}
