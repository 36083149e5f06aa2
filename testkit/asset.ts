/**
 * What the function's asset is made of, read from the asset itself: its files, each module's
 * imports (parsed by esbuild, not by pattern matching), what importing the entry loads
 * (its static import closure), and the original source files behind each module (its source
 * map). Used by the artifact test and the benchmark's cold-start section.
 *
 * Nothing here depends on vitest.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join, posix, relative, sep } from 'node:path';
import { build } from 'esbuild';

/** One JavaScript module of an asset, by its path relative to the asset directory (`/`-separated). */
export interface AssetModule {
  readonly file: string;
  readonly bytes: number;
  /** Asset modules it loads with `import` statements: loaded, and run, before it runs. */
  readonly staticImports: readonly string[];
  /** Asset modules it may load later, when its code runs `import()` (or `require()`). */
  readonly dynamicImports: readonly string[];
  /** What it imports from outside the asset with `import` statements (`node:crypto`, …): loaded with it. */
  readonly externalStaticImports: readonly string[];
  /** What it may load from outside the asset later, with `import()` or `require()`. */
  readonly externalDynamicImports: readonly string[];
}

/** The modules of an asset reachable from its entry, by file. */
export type ModuleGraph = ReadonlyMap<string, AssetModule>;

/** Every file in `dir`, recursively, relative to it with `/` separators, sorted. */
export function assetFiles(dir: string): string[] {
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((name) => statSync(join(dir, name)).isFile());
  return files.map((name) => name.split(sep).join('/')).sort();
}

/**
 * The import graph of the asset's modules from `entry`, as esbuild parses them (a bundle of the
 * asset, thrown away: only its metafile is read).
 */
export async function moduleGraph(dir: string, entry = 'index.mjs'): Promise<ModuleGraph> {
  const result = await build({
    entryPoints: [entry],
    absWorkingDir: dir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    outdir: join(tmpdir(), 'asset-graph-never-written'),
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  const graph = new Map<string, AssetModule>();
  for (const [file, input] of Object.entries(result.metafile.inputs)) {
    // Only `import` statements load a module before the importer runs; every other kind of edge
    // (import(), require()) loads it when, and if, the code gets there.
    const paths = (external: boolean, statement: boolean): string[] => [
      ...new Set(
        input.imports
          .filter((edge) => (edge.external === true) === external && (edge.kind === 'import-statement') === statement)
          .map((edge) => edge.path),
      ),
    ];
    graph.set(file, {
      file,
      bytes: input.bytes,
      staticImports: paths(false, true),
      dynamicImports: paths(false, false),
      externalStaticImports: paths(true, true),
      externalDynamicImports: paths(true, false),
    });
  }
  return graph;
}

/** `file` and every module it imports statically, transitively: what `import(file)` loads. */
export function staticClosure(graph: ModuleGraph, file: string): Set<string> {
  const loaded = new Set<string>();
  const visit = (name: string): void => {
    if (loaded.has(name)) return;
    loaded.add(name);
    for (const next of graph.get(name)?.staticImports ?? []) visit(next);
  };
  visit(file);
  return loaded;
}

/** Whether `specifier` names a Node.js built-in module (`node:fs`, `fs`, `fs/promises`). */
export function isBuiltin(specifier: string): boolean {
  const name = specifier.replace(/^node:/, '');
  return builtinModules.includes(name);
}

/**
 * The source files a module of the asset was built from, from its source map (`<file>.map`),
 * relative to the asset directory as the map resolves them: `lambda/relay.ts`,
 * `node_modules/@aws-sdk/client-sqs/dist-es/…`. Empty when there is no map.
 */
export function sourcesOf(dir: string, file: string): string[] {
  let map: { sources?: string[] };
  try {
    map = JSON.parse(readFileSync(join(dir, `${file}.map`), 'utf8')) as { sources?: string[] };
  } catch {
    return [];
  }
  return (map.sources ?? []).map((source) => posix.normalize(posix.join(posix.dirname(file), source)));
}

/** The npm package a source path belongs to (`@scope/name` or `name`), or `undefined` for the project's own files. */
export function packageOf(source: string): string | undefined {
  const at = source.lastIndexOf('node_modules/');
  if (at < 0) return undefined;
  const [first, second] = source.slice(at + 'node_modules/'.length).split('/');
  return first?.startsWith('@') === true ? `${first}/${second}` : first;
}

/** `path` relative to `dir` with `/` separators, or `undefined` when it is outside `dir`. */
export function insideDir(dir: string, path: string): string | undefined {
  const rel = relative(dir, path);
  return rel === '' || rel.startsWith('..') ? undefined : rel.split(sep).join('/');
}
