/**
 * The synthesized stack's function run against stand-ins: the emulator's queue pair made as the
 * template declares it, and the function's environment as the stack writes it with the
 * template's references pointing at the stand-ins. Shared by the tests that run the bundle.
 */
import { type Emulator, startEmulator } from '../../testkit/emulator';
import { resolveEnvironment, type SynthesizedBundle, type TemplateQueues } from '../../testkit/synth';

/** An emulator whose queue pair has the template's redrive count, visibility timeout and kind; `process.env` left alone. */
export function startTemplateEmulator(queues: TemplateQueues): Promise<Emulator> {
  return startEmulator({
    maxReceiveCount: queues.maxReceiveCount,
    visibilityTimeout: queues.visibilityTimeout,
    fifo: queues.fifo,
    keepEnvironment: true,
  });
}

/**
 * The function's environment as deployed, its `Ref`s and `GetAtt`s of the queues resolved to the
 * emulator's URLs and ARNs and of the signing secret to `signingSecretArn`, then `overrides`
 * (what a test cannot reach as deployed: the webhook, the Secrets Manager endpoint).
 */
export function deployedEnvironment(
  bundle: SynthesizedBundle,
  queues: TemplateQueues,
  emulator: Pick<Emulator, 'queue' | 'dlq'>,
  signingSecretArn: string,
  overrides: Readonly<Record<string, string>>,
): Record<string, string> {
  const [signingSecretId] =
    Object.entries(bundle.template.Resources).find(([, resource]) => resource.Type === 'AWS::SecretsManager::Secret') ?? [];
  return {
    ...resolveEnvironment(bundle.environment, {
      [queues.queueLogicalId]: emulator.queue.url,
      [`${queues.queueLogicalId}.Arn`]: emulator.queue.arn,
      [queues.deadLetterQueueLogicalId]: emulator.dlq.url,
      [`${queues.deadLetterQueueLogicalId}.Arn`]: emulator.dlq.arn,
      [String(signingSecretId)]: signingSecretArn,
    }),
    ...overrides,
  };
}
