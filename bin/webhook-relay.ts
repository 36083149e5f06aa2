/**
 * The CDK app: `npx cdk synth` / `npx cdk deploy -c webhookUrl=https://…` run this (cdk.json).
 * A configuration mistake prints one line naming the context key or prop, not a stack trace.
 */
import { App } from 'aws-cdk-lib';
import { buildApp } from '../lib/app';
import { ContextError } from '../lib/context';
import { WebhookRelayConfigError } from '../lib/webhook-relay/props';

try {
  // Synthesized explicitly below: never auto-synthesize a half-built app after an error.
  const app = new App({ autoSynth: false });
  buildApp(app);
  app.synth();
} catch (error) {
  if (!(error instanceof ContextError || error instanceof WebhookRelayConfigError)) throw error;
  console.error(`\n${error.message}\n`);
  process.exitCode = 1;
}
