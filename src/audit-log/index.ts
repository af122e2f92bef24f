import { auditLog } from "../../durable-objects/audit-log/client";
import { deliverOutbox, deliverWorkspace } from "../audit/outbox";
import type { Area } from "../http/area";

/** The workspace's audit chain: reading and verifying it, redaction on erasure, outbox delivery, witnesses. */
export const auditArea: Area = {
  name: "audit",
  routes: { paths: ["/v1/admin/audit", "/v1/audit"], load: async () => (await import("./routes")).auditRouter },
  // Last in the area list, so it redacts after every other step has run. Events still in the
  // outbox are delivered first (and a failed delivery fails the erasure, to be retried), so
  // none lands unredacted afterwards.
  eraseStep: async (env, workspaceId, userId) => {
    await deliverWorkspace(env, workspaceId);
    return { audit_events_redacted: await auditLog(env, workspaceId).redactUser(userId) };
  },
  // Whatever a Worker left in the outbox.
  crons: [(env) => deliverOutbox(env)],
  // Witness rounds, queued by the checkpoint route.
  queues: { "audit-witness": async (batch, env) => (await import("./witnessing")).consumeWitnessRounds(batch, env) },
};
