import type { AuditLog } from "../../durable-objects/audit-log";

/** The AuditLog object of a workspace; the only place that names audit objects. */
export function auditLog(env: Env, workspaceId: string): DurableObjectStub<AuditLog> {
  return (env.AUDIT_LOG as DurableObjectNamespace<AuditLog>).getByName(workspaceId);
}
