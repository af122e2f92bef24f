import { createApp } from "./app";
import { deliverOutbox } from "./audit/outbox";

export { AuditLog } from "../durable-objects/audit-log";
export { BrowserSession } from "../durable-objects/browser-session";

const app = createApp();

export default {
  fetch: app.fetch,
  /** Every minute: deliver audit events parked after a failed append. */
  scheduled: async (_controller, env, ctx) => {
    ctx.waitUntil(deliverOutbox(env));
  },
} satisfies ExportedHandler<Env>;
