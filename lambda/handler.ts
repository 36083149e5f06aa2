/**
 * The Lambda entry point. The configuration is read and validated here, once per cold start:
 * an invalid one fails the function's initialisation with a message naming the variable, before
 * any record is touched (Lambda then retries the whole batch, losing nothing).
 */
import { loadConfig } from './config';
import { createRelayHandler } from './relay';
import { disableAllocationSitePretenuring } from './v8-tuning';

disableAllocationSitePretenuring();

/** The SQS-triggered handler: POSTs each record to `WEBHOOK_URL`, returns `{ batchItemFailures }`. */
export const handler = createRelayHandler(loadConfig(process.env));
