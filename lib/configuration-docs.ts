/**
 * The settings tables of docs/configuration.md, rendered from the registry (`lambda/settings.ts`)
 * and written between markers by `npx tsx bin/docs.ts`; a test fails when the file is stale.
 */
import { leastAboveZero } from '../lambda/setting-kinds';
import { type Setting, SETTING_DOCS, SETTINGS, type SettingName, type SettingScope } from '../lambda/settings';

/** The markers around each generated table. */
export function markers(scope: SettingScope): { readonly start: string; readonly end: string } {
  return { start: `<!-- settings:${scope}:start (written by npx tsx bin/docs.ts) -->`, end: `<!-- settings:${scope}:end -->` };
}

const code = (value: string): string => `\`${value}\``;

function typeOf(setting: Setting): string {
  const unit = setting.unit === undefined ? '' : `, ${setting.unit}`;
  const above = leastAboveZero(setting);
  const range =
    setting.min === undefined || setting.max === undefined
      ? ''
      : above === undefined
        ? `, ${setting.min}–${setting.max}`
        : `, 0 (off) or ${above.text} to ${setting.max}`;
  switch (setting.kind) {
    case 'integer':
      return `whole number${unit}${range}`;
    case 'decimal':
      return `number${unit}${range}, decimals allowed`;
    case 'list':
      return `comma-separated whole numbers${unit}${range}`;
    case 'boolean':
      return '`true` / `false`';
    case 'oneOf':
      return `one of ${(setting.choices ?? []).map(code).join(', ')}`;
    case 'url':
      return 'URL';
    case 'arn':
      return 'ARN';
    case 'secret':
      return 'secret text';
    case 'string':
      return 'text';
  }
}

function defaultOf(setting: Setting): string {
  const value = setting.default;
  const text = setting.defaultText ?? (value === undefined ? 'none' : code(Array.isArray(value) ? value.join(',') : String(value)));
  return setting.propDefault === undefined || setting.scope === 'stack' ? text : `${text}; the stack: ${setting.propDefault}`;
}

/** The Markdown table of one scope's settings. */
export function settingsTable(scope: SettingScope): string {
  const names = (Object.keys(SETTINGS) as SettingName[]).filter((name) => SETTINGS[name].scope === scope);
  const rows = names.map((name) => {
    const setting: Setting = SETTINGS[name];
    const cells = [typeOf(setting), defaultOf(setting), SETTING_DOCS[name]];
    const context = setting.context === undefined ? '—' : code(setting.context);
    return `| ${(scope === 'stack' ? [context, ...cells] : [code(setting.variable ?? name), context, ...cells]).join(' | ')} |`;
  });
  const header =
    scope === 'stack' ? ['context key', 'type', 'default', 'what it sets'] : ['variable', 'context key', 'type', 'default', 'meaning'];
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows].join('\n');
}

/** `markdown` with every generated table replaced by the registry's; throws when a marker is missing. */
export function withSettingsTables(markdown: string): string {
  let result = markdown;
  for (const scope of ['function', 'local', 'stack'] as const) {
    const { start, end } = markers(scope);
    const from = result.indexOf(start);
    const to = result.indexOf(end);
    if (from < 0 || to < from) throw new Error(`docs/configuration.md: markers ${start} … ${end} not found`);
    result = `${result.slice(0, from + start.length)}\n${settingsTable(scope)}\n${result.slice(to)}`;
  }
  return result;
}
