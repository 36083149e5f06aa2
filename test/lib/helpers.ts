/**
 * Building templates in-process for assertions: the app's context (cdk.json's feature flags),
 * no asset bundling and no CloudFormation schema validation, so each template takes
 * milliseconds. The artifact test covers bundling and validation with the real `cdk synth`.
 */
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { App, type Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { inject } from 'vitest';
import { projectContext } from '../../testkit/synth';

/**
 * An app as `cdk synth` would create it, minus bundling and built-in validation (speed). It
 * synthesizes into the test run's scratch directory, which goes when the run ends.
 */
export function testApp(context: Record<string, unknown> = {}): App {
  return new App({
    outdir: mkdtempSync(join(inject('scratchDir'), 'app-')),
    builtinCloudFormationValidation: false,
    context: { ...projectContext(), 'aws:cdk:bundling-stacks': [], ...context },
  });
}

/** The resources of one type in a template, by logical id. */
export function resourcesOf(template: Template, type: string): Record<string, { Properties: Record<string, unknown> }> {
  const found = template.findResources(type) as Record<string, { Properties?: Record<string, unknown> }>;
  return Object.fromEntries(Object.entries(found).map(([id, resource]) => [id, { Properties: resource.Properties ?? {} }]));
}

/** The only resource of a type; fails when there is not exactly one. */
export function onlyResource(template: Template, type: string): { id: string; properties: Record<string, unknown> } {
  const entries = Object.entries(resourcesOf(template, type));
  if (entries.length !== 1) throw new Error(`expected one ${type}, found ${entries.length}`);
  const [id, resource] = entries[0] as [string, { Properties: Record<string, unknown> }];
  return { id, properties: resource.Properties };
}

/** A metric line of a dashboard widget: namespace, metric name, dimensions and render options. */
export interface DashboardMetric {
  readonly namespace: string;
  readonly metricName: string;
  readonly dimensions: Record<string, string>;
  readonly options: { stat?: string; label?: string; period?: number };
}

/** A widget of the dashboard body, with its metrics decoded. */
export interface DashboardWidget {
  readonly type: string;
  readonly title: string | undefined;
  readonly metrics: DashboardMetric[];
  readonly annotations: { value: number; label?: string }[];
  readonly markdown: string | undefined;
  readonly alarms: string[];
}

/**
 * The dashboard's widgets. The body is an `Fn::Join` of JSON text and tokens (queue names,
 * function names); every token becomes the text `<token>` so the JSON parses.
 */
export function dashboardWidgets(stack: Stack): DashboardWidget[] {
  const { properties } = onlyResource(Template.fromStack(stack), 'AWS::CloudWatch::Dashboard');
  const body = properties.DashboardBody as string | { 'Fn::Join': [string, unknown[]] };
  const text = typeof body === 'string' ? body : body['Fn::Join'][1].map((part) => (typeof part === 'string' ? part : '<token>')).join('');
  const parsed = JSON.parse(text) as { widgets: { type: string; properties: Record<string, unknown> }[] };
  return parsed.widgets.map(({ type, properties: p }) => {
    const rawMetrics = (p.metrics as unknown[][] | undefined) ?? [];
    const metrics = rawMetrics.map((row) => {
      const last = row[row.length - 1];
      const options = (typeof last === 'object' && last !== null ? last : {}) as DashboardMetric['options'];
      const parts = (typeof last === 'object' ? row.slice(0, -1) : row) as string[];
      const [namespace = '', metricName = '', ...dims] = parts;
      const dimensions: Record<string, string> = {};
      for (let i = 0; i + 1 < dims.length; i += 2) dimensions[dims[i] as string] = dims[i + 1] as string;
      return { namespace, metricName, dimensions, options };
    });
    const annotations = (p.annotations as { horizontal?: { value: number; label?: string }[] } | undefined)?.horizontal ?? [];
    return {
      type,
      title: p.title as string | undefined,
      metrics,
      annotations,
      markdown: p.markdown as string | undefined,
      alarms: (p.alarms as string[] | undefined) ?? [],
    };
  });
}
