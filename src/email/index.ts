import type { Area } from "../http/area";

/**
 * Workspace mailboxes: inbound mail through the Worker's `email` handler, triage on the
 * `email-triage` queue, replies drafted by the endpoint's agent, reviewed and sent. Each entry
 * point loads its module on first use, so the area costs an isolate's startup nothing.
 */
export const emailArea: Area = {
  name: "email",
  routes: { paths: ["/v1/api/email"], load: async () => (await import("./routes")).emailRouter },
  email: async (message, env) => {
    const { receive } = await import("./inbound");
    const result = await receive(env, {
      from: message.from,
      to: message.to,
      raw: message.raw,
      rawSize: message.rawSize,
    });
    if (!result.ok) message.setReject(result.reason);
  },
  queues: { "email-triage": async (batch, env) => (await import("./triage-queue")).consumeTriage(batch, env) },
  crons: [async (env) => (await import("./triage-queue")).sweepReceived(env)],
  // Mail stays (the workspace's correspondence, the user's address in it included); what the
  // user was to review moves to another admin.
  eraseStep: async (env, workspaceId, userId) => (await import("./replies")).reassignReviews(env, workspaceId, userId),
};
