/**
 * The synthesized stack's function run against stand-ins: the emulator's queue pair made as the
 * template declares it, and the function's environment as the stack writes it with the
 * template's references pointing at the stand-ins. Shared by the tests that run the bundle and by the bench.
 */
import { type Emulator, startEmulator } from './emulator';
import { type SynthesizedBundle, type TemplateQueues, templateEnvironment } from './synth';

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
  const standIns = { [queues.queueLogicalId]: emulator.queue, [queues.deadLetterQueueLogicalId]: emulator.dlq };
  return { ...templateEnvironment(bundle, standIns, () => signingSecretArn), ...overrides };
}
