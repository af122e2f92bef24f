/** The AuditLog object of a workspace; the only place that names audit objects. */
export function auditLog(env: Env, workspaceId: string) {
  return env.AUDIT_LOG.getByName(workspaceId);
}
