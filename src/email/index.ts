import type { Area } from "../http/area";
import { receive } from "./inbound";
import { reassignReviews } from "./replies";
import { consumeTriage, sweepReceived } from "./triage-queue";

/**
 * Workspace mailboxes: inbound mail through the Worker's `email` handler, triage on the
 * `email-triage` queue, replies drafted by the endpoint's agent, reviewed and sent.
 */
export const emailArea: Area = {
  name: "email",
  routes: { paths: ["/v1/api/email"], load: async () => (await import("./routes")).emailRouter },
  email: async (message, env) => {
    const result = await receive(env, {
      from: message.from,
      to: message.to,
      raw: message.raw,
      rawSize: message.rawSize,
    });
    if (!result.ok) message.setReject(result.reason);
  },
  queues: { "email-triage": consumeTriage },
  crons: [(env) => sweepReceived(env)],
  // Mail stays (the workspace's correspondence, the user's address in it included); what the
  // user was to review moves to another admin.
  eraseStep: (env, workspaceId, userId) => reassignReviews(env, workspaceId, userId),
};
