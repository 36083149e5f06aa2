/**
 * `npm run build` (also run by `npm pack` / `npm publish` through `prepack`): the package's
 * JavaScript in `dist/`, what a user installs.
 *
 * - `relay-function/`: the Lambda function's bundle, made by lib/bundle.ts exactly as `cdk synth`
 *   makes it in this repository; the construct uses it, so a user's synth runs no bundler;
 * - `index.js` / `index.cjs`: the construct library (the main export), ESM and CommonJS, its
 *   dependencies (aws-cdk-lib, constructs) left to the user's app;
 * - `webhook.js` / `webhook.cjs`: the webhook owners' kit, self-contained (Node's own modules only);
 * - `sqs-webhook-relay.js`: the daemon (`bin`), its runtime dependencies installed beside it;
 * - `types/`: declarations (tsc), with relative specifiers made explicit so a consumer resolving
 *   with `moduleResolution: NodeNext` finds them; `.d.cts` twins for `require`.
 */
import { chmodSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execFileSync } from 'node:child_process';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { type BuildOptions, build, type Plugin } from 'esbuild';
import { bundleInto, PREBUILT_FUNCTION_DIR } from '../lib/bundle';
import { nodeMajor, OLDEST_SUPPORTED_NODE } from './node-release';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');

/** Oldest Node.js the package supports (package.json `engines`): the syntax esbuild may emit. */
const NODE_TARGET = `node${nodeMajor(OLDEST_SUPPORTED_NODE)}`;

/** In CommonJS output `import.meta.url` is empty: the module's own file URL stands in for it. */
const CJS_IMPORT_META_URL: Pick<BuildOptions, 'define' | 'banner'> = {
  define: { 'import.meta.url': '__relayModuleUrl' },
  banner: { js: "const __relayModuleUrl = require('node:url').pathToFileURL(__filename).href;" },
};

/**
 * fauxqs (the sandbox's emulator) is an optional peer of the package: a production install has
 * none. A static import of a missing package fails the whole daemon at load, so the bundle
 * imports it here, once, and tolerates its absence; `local/cli.ts` then refuses the sandbox
 * with one line before anything calls it.
 */
const optionalFauxqs: Plugin = {
  name: 'optional-fauxqs',
  setup(builder) {
    builder.onResolve({ filter: /^fauxqs$/ }, (args) =>
      args.namespace === 'optional-fauxqs' ? { path: 'fauxqs', external: true } : { path: 'fauxqs', namespace: 'optional-fauxqs' },
    );
    builder.onLoad({ filter: /.*/, namespace: 'optional-fauxqs' }, () => ({
      contents: [
        'let fauxqs;',
        "try { fauxqs = await import('fauxqs'); } catch (error) { if (error?.code !== 'ERR_MODULE_NOT_FOUND') throw error; }",
        "export function buildApp(...args) { if (fauxqs === undefined) throw new Error('the sandbox needs the package fauxqs (npm install fauxqs), or set QUEUE_URL'); return fauxqs.buildApp(...args); }",
      ].join('\n'),
      loader: 'js',
    }));
  },
};

const common: BuildOptions = {
  absWorkingDir: root,
  bundle: true,
  platform: 'node',
  target: NODE_TARGET,
  // Dependencies stay imports: the user's aws-cdk-lib and constructs (peers), the daemon's SDK.
  packages: 'external',
  logLevel: 'warning',
  legalComments: 'none',
};

/** Builds one entry as ESM (`.js`) and, when asked, CommonJS (`.cjs`). */
async function library(entry: string, name: string, withCommonJs: boolean): Promise<void> {
  const esm = await build({ ...common, entryPoints: [entry], outfile: join(dist, `${name}.js`), format: 'esm', metafile: true });
  if (withCommonJs)
    await build({ ...common, ...CJS_IMPORT_META_URL, entryPoints: [entry], outfile: join(dist, `${name}.cjs`), format: 'cjs' });
  for (const output of Object.values(esm.metafile.outputs)) {
    for (const edge of output.imports)
      if (edge.external && name === 'webhook' && !edge.path.startsWith('node:'))
        throw new Error(`the webhook kit must need nothing but Node.js; it imports ${edge.path}`);
  }
}

/** Every `.d.ts` under `dir`. */
function declarations(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return declarations(path);
    return path.endsWith('.d.ts') ? [path] : [];
  });
}

/**
 * The source imports `./x` (moduleResolution Bundler); Node's resolution, and TypeScript's
 * NodeNext, want the file named: `./x.js` (or `./x/index.js`). Each declaration gets the ESM
 * form, and a `.d.cts` twin with `.cjs` specifiers for `require`.
 */
function explicitSpecifiers(): void {
  const types = join(dist, 'types');
  for (const file of declarations(types)) {
    const source = readFileSync(file, 'utf8');
    const rewrite = (extension: string): string =>
      source.replace(/(from\s+|import\()(['"])(\.{1,2}\/[^'"]+)\2/g, (_match, lead: string, quote: string, specifier: string) => {
        const target = resolve(dirname(file), specifier);
        if (existsSync(`${target}.d.ts`)) return `${lead}${quote}${specifier}${extension}${quote}`;
        if (existsSync(join(target, 'index.d.ts'))) return `${lead}${quote}${specifier}/index${extension}${quote}`;
        throw new Error(`${relative(root, file)}: cannot resolve ${specifier}`);
      });
    writeFileSync(file, rewrite('.js'));
    writeFileSync(file.replace(/\.d\.ts$/, '.d.cts'), rewrite('.cjs'));
  }
}

rmSync(dist, { recursive: true, force: true });

// The function: the bundle synth makes here (lib/webhook-relay.ts pins nodejs24.x; so does this).
bundleInto(join(dist, PREBUILT_FUNCTION_DIR), {
  entry: join(root, 'lambda', 'handler.ts'),
  projectRoot: root,
  runtime: lambda.Runtime.NODEJS_24_X,
});

await library('lib/index.ts', 'index', true);
await library('receiver/index.ts', 'webhook', true);
await build({
  ...common,
  entryPoints: ['bin/local.ts'],
  outfile: join(dist, 'sqs-webhook-relay.js'),
  format: 'esm',
  banner: { js: '#!/usr/bin/env node' },
  plugins: [optionalFauxqs],
});
chmodSync(join(dist, 'sqs-webhook-relay.js'), 0o755);

execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.build.json')], {
  stdio: 'inherit',
});
explicitSpecifiers();
