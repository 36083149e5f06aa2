/**
 * How the relay function's code is built: esbuild on this machine (no Docker), minified ESM with
 * a source map per file, the AWS SDK inside, and code splitting: what the handler loads with
 * `import()` (the SQS client, the Secrets Manager client) lands in chunks of its own, which
 * Node.js reads only when the first retry or the first secret needs them. A cold start then
 * parses the relay and its logger, not the whole SDK (BENCHMARKS.md, "4. Cold start": bytes loaded at import).
 *
 * Why not `NodejsFunction`: it runs esbuild with `--outfile`, one file, and esbuild splits code
 * only with `--outdir`. In one file the lazily imported SDK is inlined, and every cold start
 * reads all of it.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AssetHashType, DockerImage } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { BuildOptions, Metafile } from 'esbuild';

/**
 * The folder of the prebuilt bundle, beside the module that holds this code: in the published
 * package that module is `dist/index.js` (or `.cjs`) and `npm run build` writes the bundle to
 * `dist/relay-function/`. In this repository (`lib/bundle.ts`) there is no such folder, and the
 * function is bundled from source at synth time.
 */
export const PREBUILT_FUNCTION_DIR = 'relay-function';

/** The module Lambda loads: the template's handler is `<HANDLER_MODULE>.<export>`. */
export const HANDLER_MODULE = 'index';

/** Where the chunks go inside the asset (esbuild `chunkNames`, without the extension): beside `index.mjs` in `chunks/`. */
const CHUNK_NAMES = 'chunks/[name]-[hash]';

/**
 * Prepended to every output file. Bundled CommonJS code (parts of the SDK) calls `require()` for
 * Node.js built-ins, and an ES module has no `require`.
 */
export const REQUIRE_BANNER =
  "import { createRequire as __relayCreateRequire } from 'node:module'; const require = __relayCreateRequire(import.meta.url);";

/** What {@link functionCode} bundles. */
export interface FunctionCodeOptions {
  /** The handler's source file (e.g. `<root>/lambda/handler.ts`); its bundle is `index.mjs`. */
  readonly entry: string;
  /** The repository root: where modules are resolved from and what source-map paths are relative to. */
  readonly projectRoot: string;
  /** The function's runtime: the code is compiled for its Node.js major. */
  readonly runtime: lambda.Runtime;
}

/** esbuild's `node<major>` target for a `nodejs<major>.x` runtime. */
function nodeTarget(runtime: lambda.Runtime): string {
  const major = /^nodejs(\d+)\.x$/.exec(runtime.name)?.[1];
  if (major === undefined) throw new Error(`functionCode: ${runtime.name} is not a Node.js runtime`);
  return `node${major}`;
}

/** The esbuild options of the function's bundle (output paths relative to `projectRoot`, not written). */
function buildOptions(options: FunctionCodeOptions): BuildOptions & { write: false; metafile: true } {
  return {
    entryPoints: { [HANDLER_MODULE]: options.entry },
    absWorkingDir: options.projectRoot,
    // Output is kept in memory and written by bundleInto(). The nominal outdir is the project
    // root so the source maps name `lambda/relay.ts` and `node_modules/...` relative to the task
    // root: the same bytes on every machine and checkout (the asset hash is the output's), and
    // stack traces in Lambda read /var/task/lambda/relay.ts rather than a build machine's path.
    outdir: options.projectRoot,
    write: false,
    metafile: true,
    bundle: true,
    splitting: true,
    format: 'esm',
    outExtension: { '.js': '.mjs' },
    chunkNames: CHUNK_NAMES,
    // No `external`: only Node's built-ins stay outside (platform node). The AWS SDK is the
    // version in package-lock.json, not whatever the runtime ships, so the artifact behaves as tested.
    platform: 'node',
    target: nodeTarget(options.runtime),
    mainFields: ['module', 'main'],
    banner: { js: REQUIRE_BANNER },
    minify: true,
    sourcemap: 'linked',
    // File and line are what a stack trace needs; embedding the sources would double the asset.
    sourcesContent: false,
    // Warnings reach cdk synth's output (the artifact test wants none); no size summary.
    logLevel: 'warning',
  };
}

/**
 * The output modules reachable from the entry by `import` or `import()`. esbuild emits a chunk
 * for every `import()` target, even one in code tree shaking removed (the SDK's browser
 * user-agent parser, `bowser`): no module names such a chunk, so nothing could ever load it.
 */
function reachableOutputs(outputs: Metafile['outputs']): Set<string> {
  const reachable = new Set<string>();
  const visit = (name: string): void => {
    if (reachable.has(name) || outputs[name] === undefined) return;
    reachable.add(name);
    for (const edge of outputs[name].imports) if (edge.external !== true) visit(edge.path);
  };
  visit(`${HANDLER_MODULE}.mjs`);
  return reachable;
}

/**
 * Bundles the function into `outputDir`: `index.mjs`, the `chunks/*.mjs` it loads, and a `.map`
 * beside each.
 * @returns the files written, relative to `outputDir`
 * @throws esbuild's error when the code does not build
 */
export function bundleInto(outputDir: string, options: FunctionCodeOptions): string[] {
  // Loaded only here: a user's app synthesizes the packaged bundle and need not have esbuild at all.
  const { buildSync } = createRequire(import.meta.url)('esbuild') as typeof import('esbuild');
  const result = buildSync(buildOptions(options));
  const reachable = reachableOutputs(result.metafile.outputs);
  const written: string[] = [];
  for (const file of result.outputFiles) {
    const name = relative(options.projectRoot, file.path).split(sep).join('/');
    if (!reachable.has(name.replace(/\.map$/, ''))) continue;
    const target = join(outputDir, name);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, file.contents);
    written.push(name);
  }
  return written;
}

/**
 * The function's code as a Lambda asset: the package's prebuilt bundle when there is one, else
 * bundled at synth time on this machine. The asset hash
 * is the output's: CDK never fingerprints the source tree (node_modules included), and an
 * unchanged bundle is not uploaded again.
 */
export function functionCode(options: FunctionCodeOptions): lambda.Code {
  // The installed package: the bundle `npm run build` made with bundleInto(), the same files
  // synth makes here from the same source, so the user's synth runs no bundler.
  const prebuilt = join(dirname(fileURLToPath(import.meta.url)), PREBUILT_FUNCTION_DIR);
  if (existsSync(join(prebuilt, `${HANDLER_MODULE}.mjs`))) return lambda.Code.fromAsset(prebuilt);
  // The asset's source is only nominal (the bundle reads its inputs itself), but CDK requires a
  // directory: the entry's own folder, never the repository with its node_modules.
  return lambda.Code.fromAsset(dirname(options.entry), {
    assetHashType: AssetHashType.OUTPUT,
    bundling: {
      // Required by the type, never pulled: local bundling always succeeds or throws.
      image: DockerImage.fromRegistry('local-bundling-only'),
      local: {
        tryBundle(outputDir: string): boolean {
          bundleInto(outputDir, options);
          return true;
        },
      },
    },
  });
}
