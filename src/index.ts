import { AREAS, createApp } from "./app";
import { deliveringAudit } from "./audit/delivery";
import { ConversationRoomObject } from "./conversations/room/object";
import { registryOf } from "./http/area";

export { AuditLog } from "../durable-objects/audit-log";
export { BrowserSession } from "../durable-objects/browser-session";

const registry = registryOf(AREAS);
const app = createApp(registry);

/** A conversation's room runs its turns with every area's tools. */
export class ConversationRoom extends ConversationRoomObject {
  protected readonly providers = registry.tools;
}

export default {
  // Each entry point delivers the audit events its work wrote once the work is done.
  fetch: (request, env, ctx) => deliveringAudit(env, ctx, async () => app.fetch(request, env, ctx)),
  /** Every minute: each area's cron jobs (the audit outbox delivery today). */
  scheduled: async (controller, env, ctx) => {
    for (const job of registry.crons) ctx.waitUntil(deliveringAudit(env, ctx, () => job(env, controller)));
  },
  /** Each queue's batches go to the area that consumes it. */
  queue: async (batch, env, ctx) => {
    const consume = registry.queues.get(batch.queue);
    if (!consume) throw new Error(`no consumer for queue ${batch.queue}`);
    await deliveringAudit(env, ctx, () => consume(batch, env, registry));
  },
  /** Mail for the workspace mailboxes (Email Routing's catch-all to this Worker). */
  email: async (message, env, ctx) => {
    if (!registry.email) return message.setReject("This service takes no email");
    const receive = registry.email;
    await deliveringAudit(env, ctx, () => receive(message, env, ctx));
  },
} satisfies ExportedHandler<Env>;
