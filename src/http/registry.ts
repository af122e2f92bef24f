import type { BearerKind } from "../auth/resolve";
import type { ToolProvider } from "../platform/turn-tools";

/**
 * What erasing a user did in one area, as counters the area names (`{ tokens: 2 }`). The
 * erasure summary's `counts` is the union of every area's counters.
 */
export type ErasureCounts = Record<string, number>;

/** Removes or anonymizes one user's personal data in an area; must be idempotent. */
export type EraseStep = (env: Env, workspaceId: string, userId: string) => Promise<ErasureCounts>;

/** Work the Worker's `scheduled` handler runs on every cron tick. */
export type CronJob = (env: Env, controller: ScheduledController) => Promise<unknown>;

/**
 * A job that runs once an hour: the scheduler calls every cron each minute, and this one
 * runs only at `minute` past the hour of the controller's scheduled time.
 */
export const hourly =
  (minute: number, run: (env: Env, scheduledTime: number) => Promise<unknown>): CronJob =>
  async (env, controller) => {
    if (new Date(controller.scheduledTime).getUTCMinutes() === minute) await run(env, controller.scheduledTime);
  };

/** Consumes the batches of one queue (named as in wrangler.toml); `areas` gives what a turn needs (tools). */
export type QueueConsumer = (batch: MessageBatch<unknown>, env: Env, areas: AreaRegistry) => Promise<void>;

/** Takes an inbound email (the Worker's `email` handler); one area may. */
export type InboundEmail = (message: ForwardableEmailMessage, env: Env, ctx: ExecutionContext) => Promise<void>;

/** The registries filled from the area list, in its order. */
export type AreaRegistry = {
  eraseSteps: readonly { area: string; step: EraseStep }[];
  /** Personal access tokens first, then the kinds areas add. */
  bearerKinds: readonly BearerKind[];
  crons: readonly CronJob[];
  queues: ReadonlyMap<string, QueueConsumer>;
  /** Each area's tools for an agent turn, in list order. */
  tools: readonly ToolProvider[];
  email: InboundEmail | null;
};
