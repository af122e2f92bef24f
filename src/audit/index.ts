import { auditLog } from "../../durable-objects/audit-log/client";
import type { Area } from "../http/area";
import { deliverOutbox } from "./outbox";
import { auditRouter } from "./routes";

/** The workspace's audit chain: reading and verifying it, redaction on erasure, outbox delivery. */
export const auditArea: Area = {
  name: "audit",
  router: auditRouter,
  // Last in the area list, so it redacts after every other step has run.
  eraseStep: async (env, workspaceId, userId) => ({
    audit_events_redacted: await auditLog(env, workspaceId).redactUser(userId),
  }),
  // Events parked after a failed append.
  crons: [(env) => deliverOutbox(env)],
};
