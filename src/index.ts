import { createApp } from "./app";

export { AuditLog } from "../durable-objects/audit-log";
export { BrowserSession } from "../durable-objects/browser-session";

const app = createApp();

export default {
  fetch: app.fetch,
} satisfies ExportedHandler<Env>;
