/**
 * The CDK app of `bin/webhook-relay.ts`, as a function so tests build exactly what
 * `npx cdk synth` builds: the stack from context, checked by cdk-nag's AwsSolutions pack.
 */
import { type App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { contextErrorFor, stackFromContext } from './context';
import { PROPS_FROM_CONTEXT } from './webhook-relay/defaults';
import { WebhookRelayConfigError } from './webhook-relay/props';
import { WebhookRelayStack } from './webhook-relay-stack';

/**
 * Adds the relay stack (configured from the app's context) and the AwsSolutions checks to `app`.
 * @throws {ContextError | WebhookRelayConfigError} for a context value the stack cannot use
 */
export function buildApp(app: App): WebhookRelayStack {
  const { stackName, props } = stackFromContext((key) => app.node.tryGetContext(key), Object.keys(app.node.getAllContext()));
  // Every prop here came from a context key: the construct's warnings name the key the operator typed.
  app.node.setContext(PROPS_FROM_CONTEXT, true);
  let stack: WebhookRelayStack;
  try {
    stack = new WebhookRelayStack(app, stackName, props);
  } catch (error) {
    // Every prop here came from a context key: name the key the operator typed.
    if (error instanceof WebhookRelayConfigError) throw contextErrorFor(error);
    throw error;
  }
  // A policy-validation plugin: an unacknowledged finding interrupts synthesis with a report.
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
  return stack;
}
