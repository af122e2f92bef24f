import { env } from "cloudflare:workers";

/** A workspace's `usage` ledger entries: what its turns were billed. */
export const usageEntries = (workspaceId: string) =>
  env.DB.prepare("SELECT amount, reference FROM credit_ledger WHERE workspace_id = ?1 AND kind = 'usage'")
    .bind(workspaceId)
    .all<{ amount: number; reference: string }>()
    .then((r) => r.results);
