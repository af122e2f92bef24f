import { AREAS, createApp } from "./app";
import { registryOf } from "./http/area";

export { AuditLog } from "../durable-objects/audit-log";
export { BrowserSession } from "../durable-objects/browser-session";

const registry = registryOf(AREAS);
const app = createApp(registry);

export default {
  fetch: app.fetch,
  /** Every minute: each area's cron jobs (the audit outbox delivery today). */
  scheduled: async (controller, env, ctx) => {
    for (const job of registry.crons) ctx.waitUntil(job(env, controller));
  },
  /** Each queue's batches go to the area that consumes it. */
  queue: async (batch, env) => {
    const consume = registry.queues.get(batch.queue);
    if (!consume) throw new Error(`no consumer for queue ${batch.queue}`);
    await consume(batch, env, registry);
  },
  /** Mail for the workspace mailboxes (Email Routing's catch-all to this Worker). */
  email: async (message, env, ctx) => {
    if (!registry.email) return message.setReject("This service takes no email");
    await registry.email(message, env, ctx);
  },
} satisfies ExportedHandler<Env>;
