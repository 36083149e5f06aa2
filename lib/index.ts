/**
 * The package's main entry (`import { WebhookRelay } from 'sqs-webhook-relay'`): the construct,
 * its props and their types, and the whole stack for those who want it as it is deployed here.
 * The CDK app of this repository (`bin/webhook-relay.ts`, context keys, cdk-nag) is not part of
 * it: a user's app has its own.
 */
export { VISIBILITY_TIMEOUT_FACTOR } from '../lambda/aws-limits';
export { DEFAULT_METRICS_NAMESPACE as METRICS_NAMESPACE, METRIC_NAMES as RELAY_METRICS } from '../lambda/metric-names';
export type { BackoffPolicyName } from '../lambda/retry-timing';
export { BACKOFF_POLICIES, LOG_LEVELS, type LogLevel, PERMANENT_FAILURE_MODES, type PermanentFailureMode } from '../lambda/settings';
export { WebhookRelay } from './webhook-relay';
export { DLQ_RETENTION, RELAY_DEFAULTS } from './webhook-relay/defaults';
export { WebhookRelayConfigError, type WebhookRelayProps } from './webhook-relay/props';
export { WEBHOOK_URL_PARAMETER, WebhookRelayStack, type WebhookRelayStackProps } from './webhook-relay-stack';
