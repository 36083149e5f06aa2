/**
 * `npm run build`: the JavaScript of the repository's two packages, what their users install.
 * `tsx bin/build.ts <package name>…` builds only those (each package's `prepack` names itself,
 * so `npm pack` and `npm publish` build what they pack, and two packs never write the same files).
 *
 * `sqs-webhook-relay`, in `dist/`:
 * - `relay-function/`: the Lambda function's bundle, made by lib/bundle.ts exactly as `cdk synth`
 *   makes it in this repository; the construct uses it, so a user's synth runs no bundler;
 * - `index.js` / `index.cjs`: the construct library (the main export), ESM and CommonJS, its
 *   dependencies (aws-cdk-lib, constructs) left to the user's app;
 * - `webhook.js` / `webhook.cjs` / `webhook.d.ts`: the webhook kit, built from the kit's source
 *   exactly as the kit's own package is (`sqs-webhook-relay/webhook`); `receiver.*`, its
 *   deprecated former path, loads the same files with a warning;
 * - `sqs-webhook-relay.js`: the daemon (`bin`), its runtime dependencies installed beside it;
 * - `types/`: declarations (tsc), with relative specifiers made explicit so a consumer resolving
 *   with `moduleResolution: NodeNext` finds them; `.d.cts` twins for `require`.
 *
 * `sqs-webhook-relay-webhook-kit`, in `packages/webhook-kit/dist/`: the webhook kit, `index.js` /
 * `index.cjs` / `index.d.ts` (and `.d.cts`), self-contained: Node's own modules only.
 */
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execFileSync } from 'node:child_process';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { type BuildOptions, build, type Metafile, type Plugin } from 'esbuild';
import { bundleInto, PREBUILT_FUNCTION_DIR } from '../lib/bundle';
import { nodeMajor, OLDEST_SUPPORTED_NODE } from './node-release';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');

/** The webhook kit's package folder and source. */
const WEBHOOK_KIT_DIR = join(root, 'packages', 'webhook-kit');
const WEBHOOK_KIT_ENTRY = 'packages/webhook-kit/src/index.ts';

/**
 * The relay's modules the webhook kit ships, bundled in (paths from the repository root): its
 * signature is the relay's, its strategies the relay's arithmetic. Each needs nothing but Node.js;
 * any other module from outside the kit's folder fails the build (the settings registry, reached
 * through retry-timing.ts, once made the kit more than twice its size for nothing).
 */
const WEBHOOK_KIT_SHARED_MODULES: readonly string[] = ['lambda/aws-limits.ts', 'lambda/backoff-formula.ts', 'lambda/signing.ts'];

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

/** Builds one entry as ESM (`.js`) and CommonJS (`.cjs`) into `outDir`; the ESM build's metafile. */
async function library(entry: string, outDir: string, name: string): Promise<Metafile> {
  const esm = await build({ ...common, entryPoints: [entry], outfile: join(outDir, `${name}.js`), format: 'esm', metafile: true });
  await build({ ...common, ...CJS_IMPORT_META_URL, entryPoints: [entry], outfile: join(outDir, `${name}.cjs`), format: 'cjs' });
  return esm.metafile;
}

/** Runs the repository's TypeScript compiler (`tsc`) with these arguments. */
function tsc(...args: string[]): void {
  execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), ...args], { stdio: 'inherit' });
}

/**
 * The webhook kit into `outDir` as `<name>.js`, `<name>.cjs`, `<name>.d.ts` and `<name>.d.cts`:
 * the same bytes for its own package and for the main package's `sqs-webhook-relay/webhook`.
 * Throws when the kit would need anything but Node.js, or ship a module it should not.
 */
async function webhookKitInto(outDir: string, name: string): Promise<void> {
  const metafile = await library(WEBHOOK_KIT_ENTRY, outDir, name);
  for (const output of Object.values(metafile.outputs))
    for (const edge of output.imports)
      if (edge.external && !edge.path.startsWith('node:'))
        throw new Error(`the webhook kit must need nothing but Node.js; it imports ${edge.path}`);
  const strays = Object.keys(metafile.inputs).filter(
    (input) => !input.startsWith('packages/webhook-kit/') && !WEBHOOK_KIT_SHARED_MODULES.includes(input),
  );
  if (strays.length > 0)
    throw new Error(
      `the webhook kit bundles ${strays.join(', ')}; it may ship only ${WEBHOOK_KIT_SHARED_MODULES.join(', ')} from outside its folder`,
    );

  // Its declarations: tsc on the kit alone, into a scratch folder; its public types are its own,
  // so the entry's declaration is the whole of them (checked: it imports nothing).
  const scratch = mkdtempSync(join(tmpdir(), 'webhook-kit-types-'));
  try {
    tsc('-p', join(WEBHOOK_KIT_DIR, 'tsconfig.build.json'), '--outDir', scratch);
    const declaration = readFileSync(join(scratch, WEBHOOK_KIT_ENTRY.replace(/\.ts$/, '.d.ts')), 'utf8');
    const imports = [...declaration.matchAll(/(?:from\s+|import\()(['"])([^'"]+)\1/g)].map((match) => match[2]);
    if (imports.length > 0) throw new Error(`the webhook kit's declarations must stand alone; they import ${imports.join(', ')}`);
    writeFileSync(join(outDir, `${name}.d.ts`), declaration);
    writeFileSync(join(outDir, `${name}.d.cts`), declaration);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
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

/**
 * The deprecated path `sqs-webhook-relay/receiver`: the kit's files, loaded once with a
 * DeprecationWarning naming the path to use instead.
 */
function deprecatedReceiverAlias(): void {
  const warning = `process.emitWarning("'sqs-webhook-relay/receiver' is deprecated and will be removed: import 'sqs-webhook-relay/webhook' (the same webhook kit), or install sqs-webhook-relay-webhook-kit", { type: 'DeprecationWarning', code: 'SQS_WEBHOOK_RELAY_RECEIVER' });`;
  writeFileSync(join(dist, 'receiver.js'), `${warning}\nexport * from './webhook.js';\n`);
  writeFileSync(join(dist, 'receiver.cjs'), `'use strict';\n${warning}\nmodule.exports = require('./webhook.cjs');\n`);
}

/** `sqs-webhook-relay`: the construct, the function's bundle, the daemon and the kit's re-export, in `dist/`. */
async function buildRelayPackage(): Promise<void> {
  rmSync(dist, { recursive: true, force: true });

  // The function: the bundle synth makes here (lib/webhook-relay.ts pins nodejs24.x; so does this).
  bundleInto(join(dist, PREBUILT_FUNCTION_DIR), {
    entry: join(root, 'lambda', 'handler.ts'),
    projectRoot: root,
    runtime: lambda.Runtime.NODEJS_24_X,
  });

  await library('lib/index.ts', dist, 'index');
  await webhookKitInto(dist, 'webhook');
  deprecatedReceiverAlias();
  await build({
    ...common,
    entryPoints: ['bin/local.ts'],
    outfile: join(dist, 'sqs-webhook-relay.js'),
    format: 'esm',
    banner: { js: '#!/usr/bin/env node' },
    plugins: [optionalFauxqs],
  });
  chmodSync(join(dist, 'sqs-webhook-relay.js'), 0o755);

  tsc('-p', join(root, 'tsconfig.build.json'));
  explicitSpecifiers();
}

/** `sqs-webhook-relay-webhook-kit`: the kit in `packages/webhook-kit/dist/`, and the licence beside its package.json. */
async function buildWebhookKitPackage(): Promise<void> {
  const kitDist = join(WEBHOOK_KIT_DIR, 'dist');
  rmSync(kitDist, { recursive: true, force: true });
  await webhookKitInto(kitDist, 'index');
  // npm packs a LICENSE found beside package.json; the repository's one text is the source.
  copyFileSync(join(root, 'LICENSE'), join(WEBHOOK_KIT_DIR, 'LICENSE'));
}

const PACKAGES = new Map<string, () => Promise<void>>([
  ['sqs-webhook-relay', buildRelayPackage],
  ['sqs-webhook-relay-webhook-kit', buildWebhookKitPackage],
]);

const requested = process.argv.slice(2);
const unknown = requested.filter((name) => !PACKAGES.has(name));
if (unknown.length > 0) {
  console.error(`build: no package ${unknown.join(', ')}; expected one or more of ${[...PACKAGES.keys()].join(', ')}`);
  process.exit(2);
}
for (const [name, buildPackage] of PACKAGES) if (requested.length === 0 || requested.includes(name)) await buildPackage();
