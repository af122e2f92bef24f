import { createApp } from "./app";

export { AuditLog } from "../durable-objects/audit-log";

const app = createApp();

export default {
  fetch: app.fetch,
} satisfies ExportedHandler<Env>;
