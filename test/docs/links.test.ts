/**
 * The documentation a newcomer walks: every relative link in README.md and docs/ leads to a file
 * of the repository and, when it names one, to a heading that exists there (GitHub's anchors).
 * Also: the headers a webhook receives are listed once, in docs/contract.md.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The pages checked: the README and every Markdown file under docs/. */
const PAGES = [
  'README.md',
  ...readdirSync(join(PROJECT_ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** Markdown without fenced code blocks and inline code, where a `[x](y)` is not a link. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** The targets of the inline links `[text](target)` of a page. */
function linkTargets(markdown: string): string[] {
  return [...prose(markdown).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((match) => match[1] as string);
}

/** GitHub's anchor for a heading: the text lower-cased, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  const text = heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1') // a link's text only
    .replace(/[`*]/g, '')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{N}\p{M}\p{Pc}\- ]/gu, '').replace(/ /g, '-');
}

/** Every anchor of a page, duplicates numbered as GitHub numbers them (`x`, `x-1`, …). */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  const withoutCode = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const match of withoutCode.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(match[1] as string);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    out.add(count === 0 ? base : `${base}-${count}`);
  }
  return out;
}

/** The broken relative links of one page, as "target: why". */
function brokenLinks(page: string): string[] {
  const source = join(PROJECT_ROOT, page);
  const problems: string[] = [];
  for (const target of linkTargets(readFileSync(source, 'utf8'))) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:: not a file of the repository
    const [path = '', anchor] = target.split('#', 2);
    const file = path === '' ? source : resolve(dirname(source), decodeURIComponent(path));
    if (relative(PROJECT_ROOT, file).startsWith('..')) {
      problems.push(`${target}: outside the repository`);
      continue;
    }
    if (!existsSync(file)) {
      problems.push(`${target}: no such file`);
      continue;
    }
    if (anchor === undefined || anchor === '') continue;
    if (statSync(file).isDirectory() || !file.endsWith('.md')) {
      problems.push(`${target}: an anchor into a file that is not Markdown`);
      continue;
    }
    if (!anchors(readFileSync(file, 'utf8')).has(anchor)) problems.push(`${target}: no heading with that anchor`);
  }
  return problems;
}

describe('the documentation', () => {
  it.each(PAGES)('%s: every relative link resolves, anchors included', (page) => {
    expect(brokenLinks(page)).toEqual([]);
  });

  it('finds the links and headings it checks (the checker itself)', () => {
    const page = '# Title\n\n## The `x` headers, and why\n\n## Title\n\n[a](other.md#b) `[c](d)` [e](#f "t")\n```\n[g](h)\n```\n';
    expect(linkTargets(page)).toEqual(['other.md#b', '#f']);
    expect([...anchors(page)]).toEqual(['title', 'the-x-headers-and-why', 'title-1']);
    expect(slug('`<stackName>-dlq-not-empty`')).toBe('stackname-dlq-not-empty');
  });

  it("lists the headers a webhook receives in one table, the contract's; other pages link to it", () => {
    const headerRows = (page: string): string[] =>
      readFileSync(join(PROJECT_ROOT, page), 'utf8').match(/^\| `(X-Carrier-[\w-]+|webhook-id|traceparent|User-Agent)`/gm) ?? [];
    expect(headerRows('docs/contract.md').length).toBeGreaterThanOrEqual(4);
    for (const page of PAGES.filter((name) => name !== 'docs/contract.md')) expect(headerRows(page), page).toEqual([]);
  });

  it('README.md states the test command CI runs', () => {
    const ci = readFileSync(join(PROJECT_ROOT, '.ci/run'), 'utf8');
    const readme = readFileSync(join(PROJECT_ROOT, 'README.md'), 'utf8');
    const development = readme.slice(readme.indexOf('\n## Development'));
    expect(ci).toMatch(/^npm test$/m);
    expect(development).toMatch(/```sh\nnpm test\n```/);
  });
});
