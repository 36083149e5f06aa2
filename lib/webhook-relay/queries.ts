/**
 * CloudWatch Logs Insights query definitions on the function's log group, saved by the stack so
 * an operator finds them under *Logs Insights > Saved queries* (in a folder named after the
 * relay), named in the alarm descriptions and docs/operations.md: the attempts of one message,
 * dead letters by cause and status, and the webhook's refusals by status over time. They read the
 * relay's JSON log lines (`lambda/relay.ts`, docs/operations.md "Logs and metrics").
 */
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';

/** The text an operator replaces with a message id in the first query. */
export const MESSAGE_ID_PLACEHOLDER = 'PUT-THE-MESSAGE-ID-HERE';

/**
 * The log messages of records that went, or go next, to the DLQ: the relay's two dead-letter
 * lines ("Message dead-lettered: …") and the return on the last receive before SQS moves one.
 */
export const DEAD_LETTER_LINES = /^Message dead-lettered|SQS moves it to the dead-letter queue next/;

/** The saved queries of one relay. */
export interface RelayQueries {
  /** Every line about one message id, oldest first: its returns, delays, statuses, its dead-lettering. */
  readonly messageAttempts: logs.QueryDefinition;
  /** Dead letters (and last receives before SQS moves one) counted by cause and last status. */
  readonly deadLettersByCause: logs.QueryDefinition;
  /** The webhook's answers other than 2xx (status 0: no answer), by status, per 5 minutes. */
  readonly refusalsByStatus: logs.QueryDefinition;
}

/** The names the queries are saved under: `<relay name>/…`, a folder per relay in the console. */
export function queryNames(relayName: string): Readonly<Record<keyof RelayQueries, string>> {
  return {
    messageAttempts: `${relayName}/attempts of one message`,
    deadLettersByCause: `${relayName}/dead letters by cause and status`,
    refusalsByStatus: `${relayName}/refusals by status over time`,
  };
}

/** Creates the query definitions in `scope` (ids `Query…`) on `logGroup`. */
export function createQueries(scope: Construct, relayName: string, logGroup: logs.ILogGroup): RelayQueries {
  const names = queryNames(relayName);
  const query = (id: string, name: string, queryString: logs.QueryString): logs.QueryDefinition =>
    new logs.QueryDefinition(scope, id, { queryDefinitionName: name, queryString, logGroups: [logGroup] });
  return {
    messageAttempts: query(
      'QueryMessageAttempts',
      names.messageAttempts,
      new logs.QueryString({
        fields: ['@timestamp', 'level', 'message', 'outcome', 'status', 'receiveCount', 'delaySeconds', 'response', 'error'],
        // The SQS id a line names, or the original id a redriven copy claimed (logged when it was not believed).
        filterStatements: [`messageId = "${MESSAGE_ID_PLACEHOLDER}" or claimedOriginalId = "${MESSAGE_ID_PLACEHOLDER}"`],
        sort: '@timestamp asc',
        limit: 1000,
      }),
    ),
    deadLettersByCause: query(
      'QueryDeadLettersByCause',
      names.deadLettersByCause,
      new logs.QueryString({
        filterStatements: [`message like ${DEAD_LETTER_LINES.toString()}`],
        // The message says the cause in words: "…refused it permanently", "…end of its retry window", "SQS moves it…".
        statsStatements: ['count(*) as messages by message, status'],
        sort: 'messages desc',
      }),
    ),
    refusalsByStatus: query(
      'QueryRefusalsByStatus',
      names.refusalsByStatus,
      new logs.QueryString({
        // Only records not delivered get a line with a status: delivered ones are counted, not logged.
        filterStatements: ['ispresent(status)'],
        statsStatements: ['count(*) as answers by bin(5m), status'],
      }),
    ),
  };
}
