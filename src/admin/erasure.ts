/**
 * The erasure registry. Each area that stores personal data registers a step when its
 * service module loads; erasing a user runs every step, so areas added later are reached
 * without changing this file.
 */
export type ErasureCounts = {
  tokens: number;
  sessions: number;
  oauth_grants: number;
  memory_freezes: number;
  artifacts: number;
  conversations_left: number;
  audit_events_redacted: number;
};

export type EraseStep = (env: Env, workspaceId: string, userId: string) => Promise<Partial<ErasureCounts>>;

const steps = new Map<string, EraseStep>();

export function registerEraseStep(name: string, step: EraseStep): void {
  steps.set(name, step);
}

/** Runs every registered step in registration order and adds up their counts. */
export async function runEraseSteps(env: Env, workspaceId: string, userId: string): Promise<ErasureCounts> {
  const counts: ErasureCounts = {
    tokens: 0,
    sessions: 0,
    oauth_grants: 0,
    memory_freezes: 0,
    artifacts: 0,
    conversations_left: 0,
    audit_events_redacted: 0,
  };
  for (const step of steps.values()) {
    const partial = await step(env, workspaceId, userId);
    for (const [k, v] of Object.entries(partial)) counts[k as keyof ErasureCounts] += v ?? 0;
  }
  return counts;
}
