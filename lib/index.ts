/**
 * The package's main entry (`import { WebhookRelay } from 'sqs-webhook-relay'`): the construct,
 * its props and their types, and the whole stack for those who want it as it is deployed here.
 * The CDK app of this repository (`bin/webhook-relay.ts`, context keys, cdk-nag) is not part of
 * it: a user's app has its own.
 */
export {
  BACKOFF_POLICIES,
  type BackoffPolicyName,
  DLQ_RETENTION,
  LOG_LEVELS,
  type LogLevel,
  METRICS_NAMESPACE,
  PERMANENT_FAILURE_MODES,
  type PermanentFailureMode,
  RELAY_DEFAULTS,
  RELAY_METRICS,
  VISIBILITY_TIMEOUT_FACTOR,
  WebhookRelay,
  WebhookRelayConfigError,
  type WebhookRelayProps,
} from './webhook-relay';
export { WEBHOOK_URL_PARAMETER, WebhookRelayStack, type WebhookRelayStackProps } from './webhook-relay-stack';
