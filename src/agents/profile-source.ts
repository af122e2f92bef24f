/**
 * Where suggest-instructions reads the workspace's business profile from. The profile area
 * registers its reader when its service module loads; until one is registered (or when a
 * workspace has no profile) suggestions are drafted without it.
 */
export type BusinessProfileFacts = {
  domain?: string | null;
  summary?: string | null;
  industry?: string | null;
  segment?: string | null;
  size_hint?: string | null;
  /** Technology names, most confident first. */
  technologies?: readonly string[];
};

export type BusinessProfileSource = (env: Env, workspaceId: string) => Promise<BusinessProfileFacts | null>;

let source: BusinessProfileSource | null = null;

export function registerBusinessProfileSource(read: BusinessProfileSource): void {
  source = read;
}

export async function readBusinessProfile(env: Env, workspaceId: string): Promise<BusinessProfileFacts | null> {
  return source ? source(env, workspaceId) : null;
}
