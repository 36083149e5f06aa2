/**
 * What the deployed asset weighs, split the way a cold start sees it: what importing `index.mjs` loads, what each `import()` of
 * that code loads on first use, and the rest; each part's bytes attributed to the packages they came from by the source maps.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { SourceMap, type SourceMapPayload, type SourceMapping } from 'node:module';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { assetFiles, moduleGraph, packageOf, staticClosure } from '../testkit/asset';

/** Bytes by origin: an npm package, or `lambda/` for the relay's own code; largest first. */
export type Composition = readonly { readonly origin: string; readonly bytes: number }[];

/** A set of the asset's modules, weighed together. */
export interface ModuleSet {
  /** Paths relative to the asset, the entry first. */
  readonly files: readonly string[];
  /** Bytes of JavaScript (what V8 reads and compiles). */
  readonly bytes: number;
  /** Their gzip size, together (about what they add to the zipped asset). */
  readonly gzipBytes: number;
  readonly composition: Composition;
}

/** Modules first loaded by one `import()`, beyond what the import of the handler already loaded. */
export interface LazyModuleSet extends ModuleSet {
  /** The module `import()` loads, relative to the asset. */
  readonly entry: string;
  /** What it is: the largest origins of that module itself (`@aws-sdk/client-sqs`), not of the chunks it shares. */
  readonly label: string;
}

/** The asset weighed by when its modules load. */
export interface AssetWeight {
  /** `index.mjs` and every module it imports statically: what a cold start reads before the handler runs. */
  readonly atImport: ModuleSet;
  /** The Node.js built-ins those modules import statically (`node:http`, …): importing the handler loads them too. */
  readonly builtinsAtImport: readonly string[];
  /** One per `import()` in the modules loaded at import, each counted in full (two may share chunks). */
  readonly onFirstUse: readonly LazyModuleSet[];
  /** Modules neither the import nor those first uses load (the SDK loads them only in some set-ups). */
  readonly rest: ModuleSet;
  /** Every file of the asset: what is zipped and uploaded. */
  readonly total: { readonly files: number; readonly modules: number; readonly moduleBytes: number; readonly mapBytes: number };
}

/** The package a source path belongs to, or its top folder (`lambda/`) for the project's own files. */
function originOf(source: string): string {
  const own = /(?:^|\/)(lambda|lib|local|receiver)\//.exec(source);
  return packageOf(source) ?? (own === null ? source.replace(/^(\.\.\/)+/, '') : `${own[1]}/`);
}

/** Bytes of one module by origin: each column is the source map's entry at or before it on its line ("unmapped" without a map). */
function composition(dir: string, file: string): Map<string, number> {
  const code = readFileSync(join(dir, file), 'utf8');
  const mapFile = join(dir, `${file}.map`);
  if (!existsSync(mapFile)) return new Map([['unmapped', Buffer.byteLength(code)]]);
  const map = new SourceMap(JSON.parse(readFileSync(mapFile, 'utf8')) as SourceMapPayload);
  const bytes = new Map<string, number>();
  code.split('\n').forEach((line, lineIndex) => {
    // Columns count UTF-16 units; near enough to bytes for minified ASCII-heavy code.
    for (let column = 0; column < line.length; column += 1) {
      const entry: Partial<SourceMapping> = map.findEntry(lineIndex, column);
      if (entry.generatedLine !== lineIndex || entry.originalSource === undefined) continue;
      const origin = originOf(entry.originalSource);
      bytes.set(origin, (bytes.get(origin) ?? 0) + 1);
    }
  });
  return bytes;
}

const largestFirst = (origins: Map<string, number>): Composition =>
  [...origins].map(([origin, bytes]) => ({ origin, bytes })).sort((a, b) => b.bytes - a.bytes);

/** Weighs the asset in `dir` whose entry is `entry` (the template's handler module). */
export async function weighAsset(dir: string, entry = 'index.mjs'): Promise<AssetWeight> {
  const graph = await moduleGraph(dir, entry);
  const atImport = staticClosure(graph, entry);
  const importedAtImport = (kind: 'dynamicImports' | 'externalStaticImports'): string[] => [
    ...new Set([...atImport].flatMap((file) => graph.get(file)?.[kind] ?? [])),
  ];
  const weigh = (files: Iterable<string>, except: ReadonlySet<string> = new Set()): ModuleSet => {
    const list = [...files].filter((file) => !except.has(file));
    const contents = list.map((file) => readFileSync(join(dir, file)));
    const origins = new Map<string, number>();
    for (const file of list) for (const [origin, bytes] of composition(dir, file)) origins.set(origin, (origins.get(origin) ?? 0) + bytes);
    const bytes = contents.reduce((sum, content) => sum + content.length, 0);
    return { files: list, bytes, gzipBytes: gzipSync(Buffer.concat(contents), { level: 9 }).length, composition: largestFirst(origins) };
  };
  const onFirstUse = importedAtImport('dynamicImports')
    .filter((lazy) => !atImport.has(lazy))
    .map((lazy) => {
      const largest = largestFirst(composition(dir, lazy)).slice(0, 2);
      return { entry: lazy, label: largest.map(({ origin }) => origin).join(' + '), ...weigh(staticClosure(graph, lazy), atImport) };
    });
  const files = assetFiles(dir);
  const size = (maps: boolean): number =>
    files.filter((name) => name.endsWith('.map') === maps).reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);
  return {
    atImport: weigh(atImport),
    builtinsAtImport: importedAtImport('externalStaticImports').sort(),
    onFirstUse,
    rest: weigh(graph.keys(), new Set([...atImport, ...onFirstUse.flatMap((set) => set.files)])),
    total: { files: files.length, modules: graph.size, moduleBytes: size(false), mapBytes: size(true) },
  };
}
